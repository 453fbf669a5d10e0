#include "backends/cpu/onednn/fusion.h"

#include <algorithm>

namespace kiln::onednn {
namespace {

bool is_graph_output(const Graph& graph, ValueId value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

// The live node producing `value` when its only reader is `reader` and nobody else sees it.
NodeId sole_producer(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers, ValueId value,
                     NodeId reader) {
  const Value& v = graph.value(value);
  if (v.producer == kNoNode || graph.node(v.producer).dead || is_graph_output(graph, value)) return kNoNode;
  const auto& readers = consumers[static_cast<std::size_t>(value)];
  return readers.size() == 1 && readers.front() == reader ? v.producer : kNoNode;
}

bool conv_fusable(const Graph& graph, const Node& conv) {
  // An fp16 convolution rounds its own output before the add, which a fused sum cannot reproduce.
  return conv.op == OpKind::kConv2d && conv.precision == Precision::kF32 && conv.inputs.size() >= 2 &&
         graph.value(conv.inputs[1]).is_constant();
}

}  // namespace

ValueId FusionPlan::conv_operand(const Graph& graph, const Node& add, NodeId conv) {
  const ValueId produced = graph.node(conv).output;
  return add.inputs[0] == produced ? add.inputs[0] : add.inputs[1];
}

ValueId FusionPlan::other_operand(const Graph& graph, const Node& add, NodeId conv) {
  const ValueId produced = graph.node(conv).output;
  return add.inputs[0] == produced ? add.inputs[1] : add.inputs[0];
}

FusionPlan plan_fusions(const Graph& graph, const std::vector<NodeId>& order) {
  const std::size_t count = graph.nodes().size();
  FusionPlan plan{std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
                  std::vector<bool>(count, false)};
  const auto consumers = graph.consumers();
  std::vector<int> position(count, -1);
  for (std::size_t i = 0; i < order.size(); ++i)
    position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);

  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    // Fused nodes skip the rounding between them, so narrower precisions keep them apart.
    if (node.precision != Precision::kF32) continue;
    if (node.op == OpKind::kAdd && node.inputs.size() == 2 && node.inputs[0] != node.inputs[1]) {
      // Of two candidate convolutions take the later one, so the other operand is ready before it.
      NodeId chosen = kNoNode;
      for (const ValueId input : node.inputs) {
        const NodeId producer = sole_producer(graph, consumers, input, id);
        if (producer == kNoNode || !conv_fusable(graph, graph.node(producer))) continue;
        const ValueId other = input == node.inputs[0] ? node.inputs[1] : node.inputs[0];
        if (graph.value(other).is_constant()) continue;
        if (chosen == kNoNode ||
            position[static_cast<std::size_t>(producer)] > position[static_cast<std::size_t>(chosen)]) {
          chosen = producer;
        }
      }
      if (chosen != kNoNode) {
        plan.conv_into_add[static_cast<std::size_t>(id)] = chosen;
        plan.absorbed[static_cast<std::size_t>(chosen)] = true;
      }
    }
    if (node.op == OpKind::kGlobalAvgPool && node.inputs.size() == 1) {
      const NodeId producer = sole_producer(graph, consumers, node.inputs[0], id);
      if (producer != kNoNode && graph.node(producer).op == OpKind::kRadixSum &&
          graph.node(producer).precision == Precision::kF32) {
        plan.radix_sum_into_pool[static_cast<std::size_t>(id)] = producer;
        plan.absorbed[static_cast<std::size_t>(producer)] = true;
      }
    }
  }
  return plan;
}

}  // namespace kiln::onednn
