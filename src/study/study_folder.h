// The folder `kiln study -o` writes: never a mix of two runs, never over the study's inputs, and never
// a file removed that a study did not make.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/output_guard.h"

namespace kiln {

// How the caller names the output folder and the replace flag in messages (`kiln study`'s options, or
// kiln.study()'s arguments).
struct StudyFolderNames {
  std::string output = "-o";
  std::string force = "--force";
};

// The report files a study writes at the top of its folder; plans go under plans/.
const std::vector<std::string>& study_report_files();

// Makes `dir` ready for a new study writing `plans` (paths under dir/plans/). A folder holding a report
// (STUDY.md or study.json), or a study that stopped before its report (interrupted or failed), is
// refused unless `force`; with `force` the old report's files and the plans its study.json or the
// unfinished study's marker lists are removed, and nothing else. A file the new study would write that
// no earlier study made is refused either way.
void prepare_study_folder(const std::filesystem::path& dir, const std::vector<std::filesystem::path>& plans,
                          bool force, const StudyFolderNames& names = {});

// Before a study writes `plan` into `dir`: the folder holds an unfinished study, which wrote `plan`
// (a marker file, so that --force can replace what an interrupted or failed study left).
void record_unfinished_plan(const std::filesystem::path& dir, const std::filesystem::path& plan);

// The study's report is written: `dir` no longer holds an unfinished study.
void finish_study_folder(const std::filesystem::path& dir);

// Refuses a folder whose files would replace one of `inputs`, or that lies inside an input folder
// (--data: the report and plans would join the images).
void refuse_study_folder_over_inputs(const std::filesystem::path& dir,
                                     const std::vector<std::filesystem::path>& plans,
                                     const std::vector<NamedPath>& inputs,
                                     const StudyFolderNames& names = {});

}  // namespace kiln
