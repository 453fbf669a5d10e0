// Writing a study: DIR/STUDY.md (summary and decision, recipe, method, environment, results with charts,
// when to revisit, how to re-run), DIR/study.json (every number), DIR/latency.svg and
// DIR/accuracy_vs_speed.svg. Every file is written to a temp file and renamed.
#pragma once

#include <filesystem>
#include <string>

#include "study/study_runner.h"

namespace kiln {

std::string study_markdown(const StudyResult& result);
void write_study(const std::filesystem::path& dir, const StudyResult& result);

}  // namespace kiln
