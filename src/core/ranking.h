// Ranking scores and logits the same way everywhere (kiln run's top-k, the evaluation metrics, a
// detector's selection on every backend): larger values first, equal values by lower index, and a NaN
// below every number. That is a strict weak ordering even when fp16 overflow has turned outputs into
// NaN, so the sort is well defined and the finite values keep their order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kiln {

// True when value `a` at index `index_a` ranks above value `b` at index `index_b`.
inline bool ranks_above(float a, std::size_t index_a, float b, std::size_t index_b) {
  const bool a_nan = std::isnan(a);
  const bool b_nan = std::isnan(b);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a != b) return a > b;
  return index_a < index_b;
}

// The indices of the min(k, size) highest-ranked values, best first.
std::vector<std::int64_t> top_k_indices(std::span<const float> values, std::size_t k);

}  // namespace kiln
