#include "backends/common/arena_planner.h"

#include <algorithm>
#include <numeric>

namespace kiln::backends {
namespace {

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::size_t placed_size(const BufferLifetime& buffer, std::size_t alignment) {
  return round_up(std::max<std::size_t>(buffer.bytes, 1), alignment);
}

bool lifetimes_overlap(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

ArenaLayout place_buffers(const std::vector<BufferLifetime>& buffers, std::size_t alignment) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  struct Range {
    std::size_t begin, end;
  };
  std::vector<std::size_t> placed;
  std::vector<Range> conflicts;
  for (const std::size_t index : order) {
    const BufferLifetime& buffer = buffers[index];
    const std::size_t size = placed_size(buffer, alignment);
    conflicts.clear();
    for (const std::size_t other : placed) {
      if (!lifetimes_overlap(buffer, buffers[other])) continue;
      const std::size_t begin = layout.offsets[other];
      conflicts.push_back({begin, begin + placed_size(buffers[other], alignment)});
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::size_t offset = 0;
    for (const Range& range : conflicts) {
      if (offset + size <= range.begin) break;  // fits in the gap before this range
      offset = std::max(offset, range.end);
    }
    layout.offsets[index] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    placed.push_back(index);
  }
  return layout;
}

}  // namespace kiln::backends
