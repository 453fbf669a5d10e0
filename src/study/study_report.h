// Writing a study: DIR/STUDY.md (summary and decision, recipe, method, environment, results with charts,
// when to revisit, how to re-run), DIR/study.json (every number), DIR/latency.svg and
// DIR/accuracy_vs_speed.svg. Every file is written to a temp file and renamed.
#pragma once

#include <filesystem>
#include <string>

#include "study/study_runner.h"

namespace kiln {

std::string study_markdown(const StudyResult& result);

// Parts of STUDY.md that read only what every study has (plans, timing, profiles), so the detector
// study writes them too: the recipe section, the speed and size table, the kernel time per group.
std::string recipe_section(const StudyResult& result);
std::string speed_table(const StudyResult& result);
std::string kernel_time_table(const StudyResult& result);
void write_study(const std::filesystem::path& dir, const StudyResult& result);

}  // namespace kiln
