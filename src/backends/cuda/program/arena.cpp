#include "backends/cuda/program/arena.h"

#include <algorithm>

#include "core/error.h"

namespace kiln::cuda {
namespace {

// Adds the buffer of `value`, written at step `first`.
void add_buffer(const Graph& graph, const std::vector<Shape>& shapes, std::size_t elem_size, ValueId value,
                int first, ArenaAssignment& a) {
  const NodeId producer = graph.value(value).producer;
  const bool codes = producer != kNoNode && graph.node(producer).op == OpKind::kQuantize;
  a.buffer_of[static_cast<std::size_t>(value)] = static_cast<int>(a.buffers.size());
  const auto elements = static_cast<std::size_t>(shape_numel(shapes[static_cast<std::size_t>(value)]));
  a.buffers.push_back({elements * (codes ? 1 : elem_size), first, first});
}

// Quantize points whose codes their input's producer writes (quantize_fusion.h): a buffer written at the
// producer's step, shared by the quantize points of one value (they share its scale).
void add_fused_codes_buffers(const Graph& graph, const std::vector<NodeId>& order, const Schedule& schedule,
                             const std::vector<Shape>& shapes, ArenaAssignment& a) {
  std::vector<int> codes_of(graph.values().size(), -1);  // per quantized value
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    const int step = schedule.position[static_cast<std::size_t>(id)];
    if (node.op != OpKind::kQuantize || step < 0 ||
        schedule.executed[static_cast<std::size_t>(step) - 1] == id)
      continue;
    int& shared = codes_of[static_cast<std::size_t>(node.inputs[0])];
    if (shared < 0) {
      add_buffer(graph, shapes, 1, node.output, step, a);
      shared = a.buffer_of[static_cast<std::size_t>(node.output)];
    }
    a.buffer_of[static_cast<std::size_t>(node.output)] = shared;
  }
}

// Each view into its root's buffer, which is alive from the step writing the view.
void place_views(const Graph& graph, const Schedule& schedule, const ChannelViews& views,
                 ArenaAssignment& a) {
  for (std::size_t v = 0; v < views.of.size(); ++v) {
    const ChannelView& view = views.of[v];
    if (view.root == kNoValue) continue;
    const int b = a.buffer_of[static_cast<std::size_t>(view.root)];
    require(b >= 0, "cuda backend: the view '", graph.value(static_cast<ValueId>(v)).name,
            "' has no root buffer");
    a.buffer_of[v] = b;
    a.element_offset[v] = view.offset;
    const NodeId producer = graph.value(static_cast<ValueId>(v)).producer;
    int& first = a.buffers[static_cast<std::size_t>(b)].first;
    first = std::min(first, schedule.position[static_cast<std::size_t>(producer)]);
  }
}

}  // namespace

Schedule schedule_steps(const Graph& graph, const std::vector<NodeId>& order, const Fusions& fusions) {
  Schedule s;
  for (const NodeId id : order) {
    if (!fusions.absorbed[static_cast<std::size_t>(id)]) s.executed.push_back(id);
  }
  s.position.assign(graph.nodes().size(), -1);
  for (std::size_t i = 0; i < s.executed.size(); ++i)
    s.position[static_cast<std::size_t>(s.executed[i])] = static_cast<int>(i) + 1;
  for (const NodeId id : s.executed) {
    for (const NodeId inner : fusions.inner(id)) {
      if (inner != kNoNode)
        s.position[static_cast<std::size_t>(inner)] = s.position[static_cast<std::size_t>(id)];
    }
  }
  for (const NodeId id : s.executed) {
    if (fusions.pools_into_pool.empty()) break;
    for (const NodeId pool : fusions.pools_into_pool[static_cast<std::size_t>(id)]) {
      if (pool != kNoNode) s.written_inside.push_back(pool);
    }
  }
  for (std::size_t q = 0; q < fusions.codes_writer.size(); ++q) {
    const NodeId writer = fusions.codes_writer[q];
    if (writer != kNoNode) s.position[q] = s.position[static_cast<std::size_t>(writer)];
  }
  s.output_step = static_cast<int>(s.executed.size()) + 1;
  return s;
}

ArenaAssignment assign_arena(const Graph& graph, const std::vector<NodeId>& order, const Schedule& schedule,
                             const std::vector<Shape>& shapes, std::size_t elem_size,
                             const ChannelViews& views) {
  ArenaAssignment a;
  a.buffer_of.assign(graph.values().size(), -1);
  a.element_offset.assign(graph.values().size(), 0);
  for (const ValueId input : graph.inputs()) add_buffer(graph, shapes, elem_size, input, 0, a);
  for (const NodeId id : schedule.executed) {
    const Node& node = graph.node(id);
    if (views.is_view(node.output)) continue;
    if (node.op == OpKind::kFlatten) {
      a.buffer_of[static_cast<std::size_t>(node.output)] =
          a.buffer_of[static_cast<std::size_t>(node.inputs[0])];
    } else {
      add_buffer(graph, shapes, elem_size, node.output, schedule.position[static_cast<std::size_t>(id)], a);
    }
  }
  for (const NodeId id : schedule.written_inside) {
    const ValueId output = graph.node(id).output;
    if (!views.is_view(output))
      add_buffer(graph, shapes, elem_size, output, schedule.position[static_cast<std::size_t>(id)], a);
  }
  add_fused_codes_buffers(graph, order, schedule, shapes, a);
  place_views(graph, schedule, views, a);
  for (const NodeId id : order) {
    for (const ValueId v : graph.node(id).inputs) {
      const int b = a.buffer_of[static_cast<std::size_t>(v)];
      if (b < 0) continue;
      int& last = a.buffers[static_cast<std::size_t>(b)].last;
      last = std::max(last, schedule.position[static_cast<std::size_t>(id)]);
    }
  }
  for (const ValueId v : graph.outputs()) {
    const int b = a.buffer_of[static_cast<std::size_t>(v)];
    require(b >= 0, "cuda backend: graph output '", graph.value(v).name, "' is not computed by a layer");
    a.buffers[static_cast<std::size_t>(b)].last = schedule.output_step;
  }
  a.layout = backends::place_buffers(a.buffers, kArenaAlignment);
  return a;
}

}  // namespace kiln::cuda
