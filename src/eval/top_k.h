// The top classes of a classifier's logits with their softmax probabilities, ranked as core/ranking.h
// ranks (which this header re-exports for the evaluation code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/ranking.h"

namespace kiln {

struct RankedClass {
  std::int64_t index = 0;
  double probability = 0;  // softmax over every logit (NaN when a logit is NaN: the softmax is undefined)
  double logit = 0;
};

// The `k` highest-ranked classes of one image's logits with their softmax probabilities.
std::vector<RankedClass> top_k_classes(std::span<const float> logits, std::size_t k);

}  // namespace kiln
