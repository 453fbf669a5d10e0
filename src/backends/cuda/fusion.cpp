#include "backends/cuda/fusion.h"

#include "backends/common/fusion_match.h"
#include "backends/cuda/quantize_fusion.h"
#include "backends/cuda/squeeze_mlp.h"

namespace kiln::cuda {
namespace {

// A 1x1, stride 1, unpadded, ungrouped convolution with constant weights: a matrix product per pixel.
bool is_pointwise_dense(const Node& conv) {
  const auto& a = conv.attr<ConvAttrs>();
  return a.kernel[0] == 1 && a.kernel[1] == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.groups == 1 &&
         a.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
}

// The operand produced last is the one whose convolution can run at the add's place.
NodeId conv_for_add(const Graph& graph, const passes::Consumers& consumers, const Fusions& f, NodeId add) {
  const Node& node = graph.node(add);
  for (int k = 1; k >= 0; --k) {
    const NodeId conv = backends::fusable_producer(graph, consumers, node.inputs[static_cast<std::size_t>(k)],
                                                   add, OpKind::kConv2d);
    if (conv == kNoNode || graph.node(conv).attr<ConvAttrs>().activation != Activation::kNone) continue;
    if (node.inputs[0] == node.inputs[1] || f.absorbed[static_cast<std::size_t>(conv)]) continue;
    return conv;
  }
  return kNoNode;
}

// fc1 of a gate whose fc2 is `expand` and whose fc1 reads a global pool: both run as one squeeze_mlp launch
// (with fc2's activation, if any: squeeze-excite's sigmoid).
NodeId squeeze_for_expand(const Graph& graph, const passes::Consumers& consumers, NodeId expand) {
  const Node& node = graph.node(expand);
  if (node.precision == Precision::kF8 || !is_pointwise_dense(node)) return kNoNode;
  const NodeId squeeze =
      backends::fusable_producer(graph, consumers, node.inputs[0], expand, OpKind::kConv2d);
  if (squeeze == kNoNode || graph.node(squeeze).precision == Precision::kF8 ||
      !is_pointwise_dense(graph.node(squeeze)))
    return kNoNode;
  const Value& pooled = graph.value(graph.node(squeeze).inputs[0]);
  if (pooled.producer == kNoNode || graph.node(pooled.producer).op != OpKind::kGlobalAvgPool) return kNoNode;
  const Shape& w1 = graph.value(graph.node(squeeze).inputs[1]).shape;
  const Shape& w2 = graph.value(node.inputs[1]).shape;
  if (!squeeze_mlp_fits(static_cast<int>(w1[1]), static_cast<int>(w1[0]), static_cast<int>(w2[0])))
    return kNoNode;
  return squeeze;
}

// Records that `inner` runs in the step of the node whose slot is `slot`.
void absorb(Fusions& f, NodeId& slot, NodeId inner) {
  if (inner == kNoNode) return;
  slot = inner;
  f.absorbed[static_cast<std::size_t>(inner)] = true;
}

}  // namespace

std::array<NodeId, 4> Fusions::inner(NodeId node) const {
  const auto i = static_cast<std::size_t>(node);
  return {conv_into_add[i], radix_sum_into_pool[i], softmax_into_sum[i], squeeze_into_expand[i]};
}

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order, bool fuse_quantize) {
  const std::size_t count = graph.nodes().size();
  Fusions f{std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
            std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
            std::vector<bool>(count, false),     std::vector<NodeId>(count, kNoNode),
            std::vector<NodeId>(count, kNoNode), std::vector<bool>(count, true)};
  const auto consumers = graph.consumers();
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    const auto index = static_cast<std::size_t>(id);
    if (node.op == OpKind::kAdd) {
      absorb(f, f.conv_into_add[index], conv_for_add(graph, consumers, f, id));
    } else if (node.op == OpKind::kGlobalAvgPool) {
      absorb(f, f.radix_sum_into_pool[index],
             backends::fusable_producer(graph, consumers, node.inputs[0], id, OpKind::kRadixSum));
    } else if (node.op == OpKind::kDequantize) {
      f.absorbed[index] = true;  // its FP8 convolutions read the codes and scales at compile time
    } else if (node.op == OpKind::kConv2d) {
      absorb(f, f.squeeze_into_expand[index], squeeze_for_expand(graph, consumers, id));
    } else if (node.op == OpKind::kRadixWeightedSum) {
      const NodeId softmax =
          backends::fusable_producer(graph, consumers, node.inputs[1], id, OpKind::kRadixSoftmax);
      if (softmax != kNoNode && graph.node(softmax).attr<RadixAttrs>() == node.attr<RadixAttrs>())
        absorb(f, f.softmax_into_sum[index], softmax);
    }
  }
  if (fuse_quantize) find_quantize_fusions(graph, order, consumers, f);
  return f;
}

}  // namespace kiln::cuda
