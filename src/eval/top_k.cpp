#include "eval/top_k.h"

#include <cmath>

namespace kiln {

std::vector<RankedClass> top_k_classes(std::span<const float> logits, std::size_t k) {
  const std::vector<std::int64_t> order = top_k_indices(logits, k);
  if (order.empty()) return {};
  // Subtracting the largest logit keeps exp() finite; a NaN anywhere makes the total NaN.
  const double peak = logits[static_cast<std::size_t>(order.front())];
  double total = 0.0;
  for (const float logit : logits) total += std::exp(logit - peak);
  std::vector<RankedClass> ranked;
  ranked.reserve(order.size());
  for (const std::int64_t index : order) {
    const double logit = logits[static_cast<std::size_t>(index)];
    ranked.push_back({index, std::exp(logit - peak) / total, logit});
  }
  return ranked;
}

}  // namespace kiln
