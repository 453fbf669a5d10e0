// The report's first judgement, in one bold sentence and what backs it: ship, do not ship, or cannot
// tell with this many images. A study whose baseline or fp32 reference gives NaN/Inf judged nothing,
// and its headline says that rather than blaming the FP8 variants.
#pragma once

#include <string>

#include "study/study_runner.h"

namespace kiln {

std::string decision_headline(const StudyResult& result);

}  // namespace kiln
