// The study's two charts, from its figures: latency per variant against the ship threshold, and
// accuracy against speed-up with 95% intervals and the thresholds.
#pragma once

#include <string>

#include "study/study_runner.h"

namespace kiln {

std::string latency_chart(const StudyResult& result);
std::string accuracy_chart(const StudyResult& result);

}  // namespace kiln
