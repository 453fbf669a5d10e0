#include "backends/cuda/program/fusion.h"

#include "backends/common/fusion_match.h"
#include "backends/cuda/kernels/pooling_kernels.h"
#include "backends/cuda/kernels/squeeze_excite_kernels.h"
#include "backends/cuda/kernels/squeeze_mlp_batched_kernels.h"
#include "backends/cuda/kernels/squeeze_mlp_kernels.h"
#include "backends/cuda/program/quantize_fusion.h"

namespace kiln::cuda {
namespace {

// A 1x1, stride 1, unpadded convolution with constant weights: a (grouped) matrix product per pixel.
bool is_pointwise(const Node& conv) {
  const auto& a = conv.attr<ConvAttrs>();
  return a.kernel[0] == 1 && a.kernel[1] == 1 && a.stride[0] == 1 && a.stride[1] == 1 &&
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

// fc1 of a gate whose fc2 is `expand` and whose fc1 reads a global pool: both run as one launch (with
// fc2's activation, if any: squeeze-excite's sigmoid). A single image takes squeeze_mlp_kernels.h's kernel
// (any gate size, grouped convolutions too); larger batches squeeze_mlp_batched_kernels.h's, which was faster
// there and takes dense gates of up to 32k weights (bigger ones stay on cuDNN).
NodeId squeeze_for_expand(const Graph& graph, const passes::Consumers& consumers, NodeId expand,
                          std::int64_t batch) {
  const Node& node = graph.node(expand);
  if (is_quantized(node.precision) || !is_pointwise(node)) return kNoNode;
  const NodeId squeeze =
      backends::fusable_producer(graph, consumers, node.inputs[0], expand, OpKind::kConv2d);
  if (squeeze == kNoNode || is_quantized(graph.node(squeeze).precision) ||
      !is_pointwise(graph.node(squeeze)))
    return kNoNode;
  const Value& pooled = graph.value(graph.node(squeeze).inputs[0]);
  if (pooled.producer == kNoNode || graph.node(pooled.producer).op != OpKind::kGlobalAvgPool) return kNoNode;
  const Shape& w1 = graph.value(graph.node(squeeze).inputs[1]).shape;
  const Shape& w2 = graph.value(node.inputs[1]).shape;
  const auto groups1 = static_cast<int>(graph.node(squeeze).attr<ConvAttrs>().groups);
  const auto groups2 = static_cast<int>(node.attr<ConvAttrs>().groups);
  const int in = static_cast<int>(w1[1]) * groups1, hidden = static_cast<int>(w1[0]),
            out = static_cast<int>(w2[0]);
  const bool fits = batch == 1 ? squeeze_mlp_fits(in, hidden, out, groups1, groups2)
                               : groups1 == 1 && groups2 == 1 && squeeze_mlp_batched_fits(in, hidden, out);
  return fits ? squeeze : kNoNode;
}

// The global pool feeding the gate whose fc1 is `squeeze`, where the gate's launch should compute it:
// a single image (squeeze_for_expand), the pool's only reader is fc1 and the pool is small enough
// (squeeze_mlp_pools_fast).
NodeId pool_for_gate(const Graph& graph, const passes::Consumers& consumers, const Fusions& f, NodeId squeeze,
                     std::int64_t batch) {
  if (squeeze == kNoNode || batch != 1) return kNoNode;
  const Node& fc1 = graph.node(squeeze);
  const NodeId pool =
      backends::fusable_producer(graph, consumers, fc1.inputs[0], squeeze, OpKind::kGlobalAvgPool);
  if (pool == kNoNode || is_quantized(graph.node(pool).precision)) return kNoNode;
  const NodeId sum = f.radix_sum_into_pool[static_cast<std::size_t>(pool)];
  const Node& reader = sum != kNoNode ? graph.node(sum) : graph.node(pool);
  const Shape& xs = graph.value(reader.inputs[0]).shape;
  if (xs.size() != 4) return kNoNode;
  const std::int64_t radix = sum != kNoNode ? reader.attr<RadixAttrs>().radix : 1;
  const std::size_t elem_bytes = fc1.precision == Precision::kF16 ? 2 : 4;
  if (!squeeze_mlp_pools_fast(xs[2] * xs[3], radix, xs[1] / radix, elem_bytes)) return kNoNode;
  return pool;
}

struct SqueezeExcite {
  NodeId pool = kNoNode, fc2 = kNoNode, scale = kNoNode;
};

// The squeeze-excite whose fc1 is `fc1`: a global pool read by fc1 alone, fc1 read by fc2 alone, fc2 read
// by a channel scale alone as its gate; dense 1x1 convolutions (squeeze_excite_kernels.h's sizes), nothing in
// FP8 and no radix sum pooled. Empty where any of that fails.
SqueezeExcite squeeze_excite_of(const Graph& graph, const passes::Consumers& consumers, const Fusions& f,
                                NodeId fc1) {
  const Node& squeeze = graph.node(fc1);
  const auto dense_pointwise = [&](NodeId id) {
    const Node& n = graph.node(id);
    return n.op == OpKind::kConv2d && !is_quantized(n.precision) && is_pointwise(n) &&
           n.attr<ConvAttrs>().groups == 1;
  };
  if (!dense_pointwise(fc1)) return {};
  const NodeId pool =
      backends::fusable_producer(graph, consumers, squeeze.inputs[0], fc1, OpKind::kGlobalAvgPool);
  if (pool == kNoNode || is_quantized(graph.node(pool).precision) ||
      f.radix_sum_into_pool[static_cast<std::size_t>(pool)] != kNoNode ||
      graph.value(graph.node(pool).inputs[0]).shape.size() != 4)
    return {};
  const NodeId fc2 = passes::sole_reader(graph, consumers, squeeze.output).value_or(kNoNode);
  if (fc2 == kNoNode || !dense_pointwise(fc2) || graph.node(fc2).inputs[0] != squeeze.output) return {};
  const NodeId scale = passes::sole_reader(graph, consumers, graph.node(fc2).output).value_or(kNoNode);
  if (scale == kNoNode || graph.node(scale).op != OpKind::kChannelScale ||
      is_quantized(graph.node(scale).precision) ||
      graph.node(scale).inputs[1] != graph.node(fc2).output ||
      graph.node(scale).inputs[0] == graph.node(fc2).output)
    return {};
  const Shape& w1 = graph.value(squeeze.inputs[1]).shape;
  const Shape& w2 = graph.value(graph.node(fc2).inputs[1]).shape;
  if (!squeeze_excite_fits(w1[1], w1[0], w2[0])) return {};
  return {pool, fc2, scale};
}

// A stride-1 max pool with "same" padding of an odd square kernel, writing no codes: a link of a cascade.
bool same_max_pool(const Graph& graph, const Fusions& f, NodeId id) {
  const Node& node = graph.node(id);
  if (node.op != OpKind::kMaxPool2d || is_quantized(node.precision) ||
      f.absorbed[static_cast<std::size_t>(id)] ||
      f.quantize_into_producer[static_cast<std::size_t>(id)] != kNoNode)
    return false;
  const auto& a = node.attr<PoolAttrs>();
  const std::int64_t k = a.kernel[0];
  const Shape& xs = graph.value(node.inputs[0]).shape;
  return k == a.kernel[1] && k % 2 == 1 && a.stride[0] == 1 && a.stride[1] == 1 &&
         a.padding == std::array<std::int64_t, 4>{k / 2, k / 2, k / 2, k / 2} && xs.size() == 4 &&
         xs[2] * xs[3] <= kPoolCascadeMaxPixels;
}

// The pool of the same kernel reading `pool`'s output, if exactly one does.
NodeId next_in_cascade(const Graph& graph, const passes::Consumers& consumers, const Fusions& f,
                       NodeId pool) {
  NodeId next = kNoNode;
  for (const NodeId r : consumers[static_cast<std::size_t>(graph.node(pool).output)]) {
    if (!same_max_pool(graph, f, r) || graph.node(r).attr<PoolAttrs>() != graph.node(pool).attr<PoolAttrs>())
      continue;
    if (next != kNoNode) return kNoNode;
    next = r;
  }
  return next;
}

// The concat of box bins and class logits that detection decode `decode` reads apart, if its input is
// one: two parts along the channels, the first 4 * reg_max wide, nothing in FP8.
NodeId decode_parts(const Graph& graph, const passes::Consumers& consumers, NodeId decode) {
  const Node& node = graph.node(decode);
  const NodeId concat = backends::fusable_producer(graph, consumers, node.inputs[0], decode, OpKind::kConcat);
  if (concat == kNoNode || is_quantized(node.precision)) return kNoNode;
  const Node& joined = graph.node(concat);
  if (joined.attr<ConcatAttrs>().axis != 1 || joined.inputs.size() != 2 || is_quantized(joined.precision))
    return kNoNode;
  const Shape& box = graph.value(joined.inputs[0]).shape;
  return box.size() == 4 && box[1] == 4 * node.attr<DetectAttrs>().reg_max ? concat : kNoNode;
}

// Records that `inner` runs in the step of the node whose slot is `slot`.
void absorb(Fusions& f, NodeId& slot, NodeId inner) {
  if (inner == kNoNode) return;
  slot = inner;
  f.absorbed[static_cast<std::size_t>(inner)] = true;
}

}  // namespace

std::array<NodeId, 11> Fusions::inner(NodeId node) const {
  const auto i = static_cast<std::size_t>(node);
  const NodeId pool = pool_into_gate[i];
  const NodeId pooled_sum = pool != kNoNode ? radix_sum_into_pool[static_cast<std::size_t>(pool)] : kNoNode;
  const std::array<NodeId, 2> cascade =
      i < pools_into_pool.size() ? pools_into_pool[i] : std::array{kNoNode, kNoNode};
  return {conv_into_add[i],
          radix_sum_into_pool[i],
          softmax_into_sum[i],
          squeeze_into_expand[i],
          pool,
          pooled_sum,
          pool_into_squeeze[i],
          excite_into_scale[i],
          cascade[0],
          cascade[1],
          i < concat_into_decode.size() ? concat_into_decode[i] : kNoNode};
}

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order, bool fuse_quantize,
                     std::int64_t batch) {
  const std::size_t count = graph.nodes().size();
  Fusions f{
      std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
      std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
      std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
      std::vector<NodeId>(count, kNoNode), std::vector<bool>(count, false),
      std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
      std::vector<bool>(count, true),      std::vector<std::array<NodeId, 2>>(count, {kNoNode, kNoNode}),
      std::vector<NodeId>(count, kNoNode)};
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
      if (f.absorbed[index]) continue;  // a squeeze-excite's fc2, computed by its channel scale
      const SqueezeExcite se = squeeze_excite_of(graph, consumers, f, id);
      if (se.scale != kNoNode) {
        absorb(f, f.pool_into_squeeze[index], se.pool);
        absorb(f, f.excite_into_scale[static_cast<std::size_t>(se.scale)], se.fc2);
        continue;
      }
      absorb(f, f.squeeze_into_expand[index], squeeze_for_expand(graph, consumers, id, batch));
      absorb(f, f.pool_into_gate[index],
             pool_for_gate(graph, consumers, f, f.squeeze_into_expand[index], batch));
    } else if (node.op == OpKind::kDetectDecode) {
      absorb(f, f.concat_into_decode[index], decode_parts(graph, consumers, id));
    } else if (node.op == OpKind::kRadixWeightedSum) {
      const NodeId softmax =
          backends::fusable_producer(graph, consumers, node.inputs[1], id, OpKind::kRadixSoftmax);
      if (softmax != kNoNode && graph.node(softmax).attr<RadixAttrs>() == node.attr<RadixAttrs>())
        absorb(f, f.softmax_into_sum[index], softmax);
    }
  }
  if (fuse_quantize) find_quantize_fusions(graph, order, consumers, f);
  for (const NodeId id : order) {
    if (!same_max_pool(graph, f, id)) continue;
    const NodeId second = next_in_cascade(graph, consumers, f, id);
    if (second == kNoNode) continue;
    auto& chain = f.pools_into_pool[static_cast<std::size_t>(id)];
    absorb(f, chain[0], second);
    absorb(f, chain[1], next_in_cascade(graph, consumers, f, second));
  }
  return f;
}

}  // namespace kiln::cuda
