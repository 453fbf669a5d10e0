// Where each activation of a CUDA program lives: the steps' order, every materialized value's buffer and
// its lifetime in steps, placed in one arena by the shared planner (backends/common/arena_planner.h).
// Host code only.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/common/arena_planner.h"
#include "backends/cuda/program/channel_views.h"
#include "backends/cuda/program/fusion.h"
#include "graph/graph.h"

namespace kiln::cuda {

// The buffers' alignment: what cuDNN, cuBLASLt (their default assumption) and kiln's kernels want.
inline constexpr std::size_t kArenaAlignment = 256;

// Step 0 converts the graph inputs, then one step per executed node, then the output conversions.
struct Schedule {
  std::vector<NodeId> executed;        // nodes with a step of their own, in order
  std::vector<int> position;           // per node: its step (an absorbed node's is its absorber's); -1: none
  std::vector<NodeId> written_inside;  // absorbed nodes whose outputs their absorber's step still writes
  int output_step = 0;
};

Schedule schedule_steps(const Graph& graph, const std::vector<NodeId>& order, const Fusions& fusions);

struct ArenaAssignment {
  std::vector<int> buffer_of;  // per value: its buffer, -1 when it has none (constants, absorbed values)
  std::vector<std::int64_t> element_offset;  // per value: where in its buffer it starts (views)
  std::vector<backends::BufferLifetime> buffers;
  backends::ArenaLayout layout;
};

// One buffer per graph input and per executed or written_inside node's output (a flatten's output is its
// input's buffer; a quantize point's holds one E4M3 byte per element, the others `elem_size` bytes per
// element), alive from the step writing it to its last reader's (graph outputs: the output step). `shapes`:
// per value. A view (channel_views.h) has no buffer of its own: it lives in its root's, which is then alive
// from the first step writing any view of it to the last reading one.
ArenaAssignment assign_arena(const Graph& graph, const std::vector<NodeId>& order, const Schedule& schedule,
                             const std::vector<Shape>& shapes, std::size_t elem_size,
                             const ChannelViews& views = {});

}  // namespace kiln::cuda
