// Adds (alone or as a convolution's residual epilogue), activations, unfolded batch norms and
// squeeze-excite's channel scales: kiln's row-by-channel kernels. Adds and activations write the E4M3
// codes of a quantize point fused into them (quantize_fusion.h).
#include "backends/cuda/kernels/elementwise_kernels.h"
#include "backends/cuda/kernels/host_constants.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_add(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const Activation act = node.attr<AddAttrs>().activation;
  const NodeId conv = fusions_.conv_into_add[static_cast<std::size_t>(id)];
  if (conv != kNoNode) {
    const Node& c = graph_.node(conv);
    const ValueId other = node.inputs[0] == c.output ? node.inputs[1] : node.inputs[0];
    return add_conv_layer(c, conv, act, residual_of(other), id);
  }
  for (const ValueId input : node.inputs) {
    require(residual_of(input).codes_scale == 0, "cuda backend: add '", node.name, "' reads the codes of '",
            graph_.value(input).name,
            "' without a convolution computed with it (build without --quantize-residuals)");
  }
  const void* a = ptr(node.inputs[0]);
  const void* b = ptr(node.inputs[1]);
  void* y = value_out(id);
  const CodesOut codes = codes_out(id);
  const std::int64_t rows = rows_of(out_shape);
  const int ch = to_int(channels_of(out_shape));
  const Elem e = elem_;
  if (pitch(node.inputs[0]) > 0 || pitch(node.inputs[1]) > 0 || pitch(node.output) > 0) {
    const auto or_packed = [&](ValueId v) { return pitch(v) > 0 ? pitch(v) : std::int64_t{ch}; };
    const ViewPitches p{or_packed(node.inputs[0]), or_packed(node.inputs[1]), or_packed(node.output)};
    return add_step(id, cat("add act ", activation_name(act), " (channel views)"), [=](cudaStream_t s) {
      check(add_act_views(a, b, y, p, e, rows, ch, act_of(act), s), "add");
    });
  }
  add_step(id, cat("add act ", activation_name(act), codes_label(id)), [=](cudaStream_t s) {
    check(add_bias_act(a, b, nullptr, y, e, rows, ch, act_of(act), s, codes), "add");
  });
}

// A quantize point's output is its codes (quantize_fusion.h): a residual read from it is E4M3 or int8.
ProgramBuilder::Residual ProgramBuilder::residual_of(ValueId value) {
  const NodeId producer = graph_.value(value).producer;
  if (producer == kNoNode || graph_.node(producer).op != OpKind::kQuantize) return {ptr(value)};
  const auto& point = graph_.node(producer).attr<QuantizeAttrs>();
  return {ptr(value), point.scale, point.int8};
}

void ProgramBuilder::add_activation(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const Act act = act_of(node.attr<ActivationAttrs>().activation);
  const void* x = ptr(node.inputs[0]);
  void* y = value_out(id);
  const CodesOut codes = codes_out(id);
  const std::int64_t rows = rows_of(out_shape);
  const int ch = to_int(channels_of(out_shape));
  const Elem e = elem_;
  add_step(id, cat("activation", codes_label(id)), [=](cudaStream_t s) {
    check(add_bias_act(x, nullptr, nullptr, y, e, rows, ch, act, s, codes), "activation");
  });
}

void ProgramBuilder::add_batch_norm(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const ScaleShift folded =
      fold_batch_norm(constant(node.inputs[1]), constant(node.inputs[2]), constant(node.inputs[3]),
                      constant(node.inputs[4]), node.attr<BatchNormAttrs>().epsilon);
  const auto* sc = static_cast<const float*>(keep(upload(folded.scale, Elem::kF32)));
  const auto* sh = static_cast<const float*>(keep(upload(folded.shift, Elem::kF32)));
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const std::int64_t rows = rows_of(out_shape);
  const int ch = to_int(channels_of(out_shape));
  const Elem e = elem_;
  add_step(id, "batch norm (scale, shift)",
           [=](cudaStream_t s) { check(scale_shift(x, sc, sh, y, e, rows, ch, s), "batch norm"); });
}

void ProgramBuilder::add_channel_scale(NodeId id) {
  if (fusions_.excite_into_scale[static_cast<std::size_t>(id)] != kNoNode) return add_excite_scale(id);
  const Node& node = graph_.node(id);
  const Shape& xs = shape(node.inputs[0]);
  const void* x = ptr(node.inputs[0]);
  const void* gate = ptr(node.inputs[1]);
  void* y = ptr(node.output);
  const int images = to_int(xs[0]), ch = to_int(channels_of(xs));
  const std::int64_t pixels = xs[2] * xs[3];
  const Elem e = elem_;
  add_step(id, "channel scale", [=](cudaStream_t s) {
    check(channel_scale(x, gate, y, e, images, pixels, ch, s), "channel scale");
  });
}

}  // namespace kiln::cuda
