// Activation arena planning, shared by every backend: each buffer a compiled model needs lives at a fixed
// offset in one arena, chosen at compile time so that buffers alive at the same step never overlap and
// the run path allocates nothing.
#pragma once

#include <cstddef>
#include <vector>

namespace kiln::backends {

// A buffer and the steps that use it: alive from `first` to `last`, both inclusive.
struct BufferLifetime {
  std::size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct ArenaLayout {
  std::vector<std::size_t> offsets;  // one per buffer, multiples of the alignment
  std::size_t total_bytes = 0;       // arena size
};

// Places the largest buffers first (ties in index order, so the layout is deterministic), each at the
// lowest offset that does not overlap a buffer placed before it whose lifetime intersects its own: the
// usual greedy-by-size heuristic, close to the peak of live bytes on convolutional networks. Every buffer
// takes at least one byte, rounded up to `alignment`.
ArenaLayout place_buffers(const std::vector<BufferLifetime>& buffers, std::size_t alignment);

}  // namespace kiln::backends
