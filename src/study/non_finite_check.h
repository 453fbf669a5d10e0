// NaN/Inf in a study, counted per input: how many held-out images and stress inputs have any
// non-finite logit. A non-finite output of the baseline or the fp32 reference makes every comparison
// with it meaningless, so the study says so first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "eval/evaluate.h"

namespace kiln {

struct StudyResult;

// Stress inputs with at least one non-finite logit.
std::size_t stress_inputs_with_non_finite(const EvalResult& eval);

// "0 of 12 images, 1 of 13 stress inputs"
std::string non_finite_inputs_text(const EvalResult& eval);

// One line per variant the others are measured against (the baseline, fp32) that has a non-finite
// output; empty when all are finite.
std::vector<std::string> reference_non_finite_warnings(const StudyResult& result);

}  // namespace kiln
