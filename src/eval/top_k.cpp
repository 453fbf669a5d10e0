#include "eval/top_k.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln {

std::vector<std::int64_t> top_k_indices(std::span<const float> values, std::size_t k) {
  std::vector<std::int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  const std::size_t count = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    [&](std::int64_t a, std::int64_t b) {
                      const auto ia = static_cast<std::size_t>(a);
                      const auto ib = static_cast<std::size_t>(b);
                      return ranks_above(values[ia], ia, values[ib], ib);
                    });
  order.resize(count);
  return order;
}

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
