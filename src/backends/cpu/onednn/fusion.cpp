#include "backends/cpu/onednn/fusion.h"

#include <algorithm>

#include "backends/common/fusion_match.h"

namespace kiln::onednn {
namespace {

bool conv_fusable(const Graph& graph, const Node& conv) {
  // An fp16 convolution rounds its own output before the add, which a fused sum cannot reproduce. A bf16
  // one fuses all the same: its sum adds the unrounded f32 result, one rounding fewer than the
  // reference's (at most half a bf16 step of the convolution's output), and saves a pass over the tensor.
  // An int8 one writes f32, as the reference does, and its sum adds that f32 value.
  const bool precision = conv.precision == Precision::kF32 || conv.precision == Precision::kBf16;
  if (conv.precision == Precision::kI8) return true;  // its weights are the int8 codes of its dequantize point
  return precision && conv.inputs.size() >= 2 && graph.value(conv.inputs[1]).is_constant();
}

// The precision of an add a convolution of `conv_precision` computes as its sum post-op: its own, or f32
// for an int8 convolution (int8 layers write f32).
bool sums_into(Precision conv_precision, Precision add_precision) {
  return conv_precision == add_precision || (conv_precision == Precision::kI8 && add_precision == Precision::kF32);
}

// Of the add's operands computed by a convolution that can take the add as a sum post-op, the one
// produced later (so the other operand is ready before it); kNoNode when there is none.
NodeId conv_for_add(const Graph& graph, const passes::Consumers& consumers, const std::vector<int>& position,
                    NodeId add) {
  const Node& node = graph.node(add);
  NodeId chosen = kNoNode;
  for (const ValueId input : node.inputs) {
    const NodeId producer = backends::fusable_producer(graph, consumers, input, add, OpKind::kConv2d);
    if (producer == kNoNode || !conv_fusable(graph, graph.node(producer))) continue;
    if (!sums_into(graph.node(producer).precision, node.precision)) continue;
    const ValueId other = input == node.inputs[0] ? node.inputs[1] : node.inputs[0];
    if (graph.value(other).is_constant()) continue;
    if (chosen == kNoNode ||
        position[static_cast<std::size_t>(producer)] > position[static_cast<std::size_t>(chosen)]) {
      chosen = producer;
    }
  }
  return chosen;
}

// Adds fused into an int8 convolution whose other operand is an int8 quantize point's output.
void find_codes_sums(const Graph& graph, Fusions& f) {
  for (std::size_t id = 0; id < f.codes_sum.size(); ++id) {
    const NodeId conv = f.conv_into_add[id];
    if (conv == kNoNode || graph.node(conv).precision != Precision::kI8) continue;
    const ValueId other = Fusions::other_operand(graph, graph.node(static_cast<NodeId>(id)), conv);
    f.codes_sum[id] = int8_quantize_producing(graph, other) != nullptr;
  }
}

}  // namespace

const Node* int8_quantize_producing(const Graph& graph, ValueId value) {
  const NodeId producer = graph.value(value).producer;
  if (producer == kNoNode) return nullptr;
  const Node& node = graph.node(producer);
  if (node.op != OpKind::kQuantize) return nullptr;
  const QuantizeAttrs& q = node.attr<QuantizeAttrs>();
  return q.int8 && !q.per_channel() ? &node : nullptr;
}

bool takes_int8_codes(const Graph& graph, const Fusions& fusions, NodeId reader, ValueId value) {
  const Node& node = graph.node(reader);
  if (node.op == OpKind::kConv2d) return node.precision == Precision::kI8 && node.inputs[0] == value;
  const auto index = static_cast<std::size_t>(reader);
  return node.op == OpKind::kAdd && fusions.codes_sum[index] &&
         Fusions::other_operand(graph, node, fusions.conv_into_add[index]) == value;
}

ValueId Fusions::conv_operand(const Graph& graph, const Node& add, NodeId conv) {
  const ValueId produced = graph.node(conv).output;
  return add.inputs[0] == produced ? add.inputs[0] : add.inputs[1];
}

ValueId Fusions::other_operand(const Graph& graph, const Node& add, NodeId conv) {
  const ValueId produced = graph.node(conv).output;
  return add.inputs[0] == produced ? add.inputs[1] : add.inputs[0];
}

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order) {
  const std::size_t count = graph.nodes().size();
  Fusions fusions{std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
                  std::vector<bool>(count, false), std::vector<bool>(count, false)};
  const auto consumers = graph.consumers();
  std::vector<int> position(count, -1);
  for (std::size_t i = 0; i < order.size(); ++i)
    position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);

  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    // Fused nodes skip the rounding between them, so fp16 keeps them apart to stay exact. bf16 fuses all
    // the same (one rounding fewer than the reference's, at most half a bf16 step): a pass over a whole
    // tensor saved is where bf16's speed comes from.
    if (node.precision != Precision::kF32 && node.precision != Precision::kBf16) continue;
    if (node.op == OpKind::kAdd && node.inputs.size() == 2 && node.inputs[0] != node.inputs[1]) {
      const NodeId conv = conv_for_add(graph, consumers, position, id);
      if (conv != kNoNode) {
        fusions.conv_into_add[static_cast<std::size_t>(id)] = conv;
        fusions.absorbed[static_cast<std::size_t>(conv)] = true;
      }
    }
    if (node.op == OpKind::kGlobalAvgPool && node.inputs.size() == 1) {
      const NodeId sum = backends::fusable_producer(graph, consumers, node.inputs[0], id, OpKind::kRadixSum);
      if (sum != kNoNode && graph.node(sum).precision == node.precision) {
        fusions.radix_sum_into_pool[static_cast<std::size_t>(id)] = sum;
        fusions.absorbed[static_cast<std::size_t>(sum)] = true;
      }
    }
  }
  find_codes_sums(graph, fusions);
  return fusions;
}

}  // namespace kiln::onednn
