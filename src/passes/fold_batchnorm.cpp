// fold_batchnorm: conv2d -> batch_norm becomes one conv2d.
//
// Inference batch norm is the per-channel affine map y = (x - mean) * s + beta with
// s = gamma / sqrt(var + eps). Applied to a convolution's output channel o it is absorbed exactly (up to
// rounding) by scaling that channel's filter by s[o] and replacing its bias b[o] (0 when absent) by
// (b[o] - mean[o]) * s[o] + beta[o]. Only output channels are touched, so grouped and depthwise
// convolutions fold the same way. The arithmetic runs in double and is rounded to f32 once.
#include <cmath>
#include <optional>

#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

using passes::Consumers;

// Match: the convolution that produces the batch norm's input, if any.
std::optional<NodeId> conv_feeding(const Graph& graph, const Node& bn) {
  if (bn.inputs.size() != 5) return std::nullopt;
  const NodeId producer = graph.value(bn.inputs[0]).producer;
  if (producer == kNoNode) return std::nullopt;  // a graph input or a constant: nothing to fold into
  if (graph.node(producer).op != OpKind::kConv2d) return std::nullopt;
  return producer;
}

bool is_f32_constant(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  return value.is_constant() && value.constant.dtype() == DType::kF32;
}

bool is_f32_vector(const Graph& graph, ValueId id, std::int64_t length) {
  return is_f32_constant(graph, id) && graph.value(id).constant.shape() == Shape{length};
}

// Check: folding must not change what anyone else sees, and every number it needs must be known now.
bool safe_to_fold(const Graph& graph, const Consumers& consumers, NodeId conv_id, NodeId bn_id) {
  const Node& conv = graph.node(conv_id);
  const Node& bn = graph.node(bn_id);
  // Another reader of the conv's output (or a graph output) would see the rescaled values.
  if (passes::sole_reader(graph, consumers, conv.output) != bn_id) return false;
  // A fused activation sits between the conv and the BN; the affine map cannot move through it.
  if (conv.attr<ConvAttrs>().activation != Activation::kNone) return false;
  if (conv.inputs.size() < 2 || !is_f32_constant(graph, conv.inputs[1])) return false;
  const Shape& weight_shape = graph.value(conv.inputs[1]).shape;
  if (weight_shape.size() != 4) return false;
  const std::int64_t channels = weight_shape[0];
  if (conv.inputs.size() == 3 && !is_f32_vector(graph, conv.inputs[2], channels)) return false;
  // gamma, beta, mean and var must be constants with one entry per conv output channel.
  for (std::size_t i = 1; i < 5; ++i) {
    if (!is_f32_vector(graph, bn.inputs[i], channels)) return false;
  }
  // A non-positive var + eps has no finite scale; such a BN is left for the runtime to expose.
  const double epsilon = bn.attr<BatchNormAttrs>().epsilon;
  for (const float var : graph.value(bn.inputs[4]).constant.f32()) {
    const double denominator = static_cast<double>(var) + epsilon;
    if (!(denominator > 0.0) || !std::isfinite(denominator)) return false;
  }
  return true;
}

// Apply: new weight and bias constants for the conv, then the BN's readers read the conv.
void fold(Graph& graph, NodeId conv_id, NodeId bn_id) {
  const Node& bn = graph.node(bn_id);
  const auto gamma = graph.value(bn.inputs[1]).constant.f32();
  const auto beta = graph.value(bn.inputs[2]).constant.f32();
  const auto mean = graph.value(bn.inputs[3]).constant.f32();
  const auto var = graph.value(bn.inputs[4]).constant.f32();
  const double epsilon = bn.attr<BatchNormAttrs>().epsilon;

  const Node& conv = graph.node(conv_id);
  const Tensor& weight = graph.value(conv.inputs[1]).constant;
  const Tensor* bias = conv.inputs.size() == 3 ? &graph.value(conv.inputs[2]).constant : nullptr;
  const auto channels = static_cast<std::size_t>(weight.dim(0));
  const std::size_t per_channel = static_cast<std::size_t>(weight.numel()) / channels;

  Tensor folded_weight(DType::kF32, weight.shape());
  Tensor folded_bias(DType::kF32, {weight.dim(0)});
  const auto w = weight.f32();
  const auto w_out = folded_weight.mutable_f32();
  const auto b_out = folded_bias.mutable_f32();
  for (std::size_t o = 0; o < channels; ++o) {
    const double scale = static_cast<double>(gamma[o]) / std::sqrt(static_cast<double>(var[o]) + epsilon);
    for (std::size_t k = o * per_channel; k < (o + 1) * per_channel; ++k) {
      w_out[k] = static_cast<float>(static_cast<double>(w[k]) * scale);
    }
    const double b = bias != nullptr ? static_cast<double>(bias->f32()[o]) : 0.0;
    b_out[o] = static_cast<float>((b - mean[o]) * scale + beta[o]);
  }

  const std::string conv_name = conv.name;
  const ValueId weight_id = graph.add_constant(passes::fresh_value_name(graph, conv_name + ".weight.folded"),
                                               std::move(folded_weight));
  const ValueId bias_id =
      graph.add_constant(passes::fresh_value_name(graph, conv_name + ".bias.folded"), std::move(folded_bias));
  Node& rewritten = graph.node(conv_id);
  rewritten.inputs = {rewritten.inputs[0], weight_id, bias_id};
  passes::bypass(graph, bn_id, rewritten.output);
}

}  // namespace

PassChanges fold_batchnorm(Graph& graph) {
  PassChanges changes;
  Consumers consumers = graph.consumers();
  for (const NodeId bn_id : graph.topological_order()) {
    const Node& bn = graph.node(bn_id);
    if (bn.dead || bn.op != OpKind::kBatchNorm) continue;
    const std::optional<NodeId> conv_id = conv_feeding(graph, bn);
    if (!conv_id || !safe_to_fold(graph, consumers, *conv_id, bn_id)) continue;
    changes.push_back(cat("folded ", bn.name, " into ", graph.node(*conv_id).name));
    fold(graph, *conv_id, bn_id);
    consumers = graph.consumers();  // the conv's output now has the BN's readers
  }
  return changes;
}

}  // namespace kiln
