#include "core/ranking.h"

#include <algorithm>
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

}  // namespace kiln
