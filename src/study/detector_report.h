// Writing a detector study: DIR/STUDY.md (summary and decision, recipe, method, environment, results
// with charts, what was not tried, when to revisit, how to re-run), DIR/study.json (every number),
// DIR/latency.svg and DIR/accuracy_vs_speed.svg (mAP against speed): the files a classifier study
// writes, so `kiln study -o` guards both alike. The sections that describe plans, timing and the
// environment are the classifier study's own (report_sections.h, study_report.h).
#pragma once

#include <filesystem>
#include <string>

#include "study/detector_study_result.h"

namespace kiln {

std::string detector_study_markdown(const DetectorStudyResult& result);
void write_detector_study(const std::filesystem::path& dir, const DetectorStudyResult& result);

}  // namespace kiln
