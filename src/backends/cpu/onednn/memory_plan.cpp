#include "backends/cpu/onednn/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace kiln::onednn {
namespace {

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool lifetimes_overlap(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, std::size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Ties broken by index so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  struct Range {
    std::size_t begin, end;
  };
  std::vector<std::size_t> placed;
  std::vector<Range> conflicts;
  for (const std::size_t index : order) {
    const BufferLifetime& buffer = buffers[index];
    const std::size_t size = round_up(std::max<std::size_t>(buffer.bytes, 1), alignment);
    conflicts.clear();
    for (const std::size_t other : placed) {
      if (!lifetimes_overlap(buffer, buffers[other])) continue;
      const std::size_t begin = plan.offsets[other];
      conflicts.push_back(
          {begin, begin + round_up(std::max<std::size_t>(buffers[other].bytes, 1), alignment)});
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::size_t offset = 0;
    for (const Range& range : conflicts) {
      if (offset + size <= range.begin) break;  // fits in the gap before this range
      offset = std::max(offset, range.end);
    }
    plan.offsets[index] = offset;
    plan.total_bytes = std::max(plan.total_bytes, offset + size);
    placed.push_back(index);
  }
  return plan;
}

}  // namespace kiln::onednn
