// NaN/Inf in a study, counted per input: how many held-out images and stress inputs have any
// non-finite logit. A non-finite output of the baseline or the fp32 reference on held-out images makes
// every comparison with it meaningless; one on stress inputs alone leaves the image figures standing but
// fails the finite check the baseline must pass. Either way no FP8 variant ships and the study says so first.
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

struct NonFiniteReference {
  std::string summary;  // "fp16 (the baseline) gives NaN/Inf on 0 of 10 images, 1 of 13 stress inputs"
  std::string warning;  // the report's line: the summary and what it means for the study
  bool on_images;       // some held-out image is non-finite (not only stress inputs)
};

// One per variant the others are measured against (the baseline, fp32) that has a non-finite output;
// empty when all are finite.
std::vector<NonFiniteReference> non_finite_references(const StudyResult& result);
std::vector<std::string> non_finite_warnings(const std::vector<NonFiniteReference>& references);

// The reason each FP8 variant's verdict starts with when `reference` is non-finite.
std::string non_finite_verdict_reason(const NonFiniteReference& reference);

}  // namespace kiln
