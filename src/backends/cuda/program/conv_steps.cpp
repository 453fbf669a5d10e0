// Convolutions and linear layers (on cuDNN, cuBLASLt or kiln's kernels, chosen in conv_candidates.cpp) and
// the attention gate's two 1x1 convolutions as one squeeze_mlp launch.
#include "backends/cuda/kernels/host_constants.h"
#include "backends/cuda/kernels/squeeze_mlp_batched_kernels.h"
#include "backends/cuda/kernels/squeeze_mlp_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {
void ProgramBuilder::add_conv2d(NodeId id) {
  const Node& node = graph_.node(id);
  const NodeId squeeze = fusions_.squeeze_into_expand[static_cast<std::size_t>(id)];
  if (squeeze != kNoNode) return add_squeeze_mlp(id, squeeze);
  if (fusions_.pool_into_squeeze[static_cast<std::size_t>(id)] != kNoNode) return add_squeeze_pool(id);
  add_conv_layer(node, id, node.attr<ConvAttrs>().activation, {}, id);
}

void ProgramBuilder::add_linear(NodeId id) {
  const Node& node = graph_.node(id);
  add_conv_layer(node, id, Activation::kNone, {}, id);
}

void ProgramBuilder::add_squeeze_mlp(NodeId fc2, NodeId squeeze) {
  const Node& node = graph_.node(fc2);
  const Node& fc1 = graph_.node(squeeze);
  const Tensor& w1 = constant(fc1.inputs[1]);
  const Tensor& w2 = constant(node.inputs[1]);
  GateShape g;
  g.groups1 = to_int(fc1.attr<ConvAttrs>().groups);
  g.groups2 = to_int(node.attr<ConvAttrs>().groups);
  g.n = to_int(shape(node.output)[0]);
  g.in = to_int(w1.dim(1)) * g.groups1;
  g.hidden = to_int(w1.dim(0));
  g.out = to_int(w2.dim(0));
  g.cluster = gate_cluster_size(elem_, g.n);
  // The pool the launch computes (and the radix sum it pools), if any: it then reads the pool's input.
  const NodeId pool = fusions_.pool_into_gate[static_cast<std::size_t>(fc2)];
  const NodeId sum = pool != kNoNode ? fusions_.radix_sum_into_pool[static_cast<std::size_t>(pool)] : kNoNode;
  const ValueId source = sum != kNoNode    ? graph_.node(sum).inputs[0]
                         : pool != kNoNode ? graph_.node(pool).inputs[0]
                                           : fc1.inputs[0];
  if (pool != kNoNode) {
    g.hw = to_int(shape(source)[2] * shape(source)[3]);
    g.radix = sum != kNoNode ? to_int(graph_.node(sum).attr<RadixAttrs>().radix) : 1;
  }
  // [O, I / groups, 1, 1] weights are already the row-major rows the kernel reads.
  const Elem e = elem_;
  const void* pw1 = keep(upload(w1, e));
  const void* pb1 = upload_bias(fc1, g.hidden);
  const void* pw2 = keep(upload(w2, e));
  const void* pb2 = upload_bias(node, g.out);
  const Act act1 = act_of(fc1.attr<ConvAttrs>().activation);
  const Activation gate_act = node.attr<ConvAttrs>().activation;
  const Act act2 = act_of(gate_act);
  const void* x = ptr(source);
  void* y = ptr(node.output);
  const std::string pooled = pool == kNoNode  ? ""
                             : sum != kNoNode ? "radix sum + global avg pool + "
                                              : "global avg pool + ";
  const std::string then = gate_act == Activation::kNone ? "" : cat(" + ", activation_name(gate_act));
  const std::string label = cat("attention gate ", pooled, "fc1 + act + fc2", then, " (squeeze_mlp, ", g.in,
                                " -> ", g.hidden, " -> ", g.out, ")");
  // find_fusions() gave a batch above one only dense gates the batched kernel takes, and no pool.
  if (g.n > 1) {
    return add_step(fc2, label, [=](cudaStream_t s) {
      check(squeeze_mlp_batched(x, pw1, pb1, act1, pw2, pb2, act2, y, e, g.n, g.in, g.hidden, g.out, s),
            "attention gate");
    });
  }
  add_step(fc2, label, [=](cudaStream_t s) {
    check(squeeze_mlp(x, pw1, pb1, act1, pw2, pb2, act2, y, e, g, s), "attention gate");
  });
}

ConvGeometry ProgramBuilder::conv_geometry(const Node& conv, const Tensor& weights,
                                           const Shape& y_shape) const {
  const Shape& xs = shape(conv.inputs[0]);
  ConvGeometry g;
  g.n = to_int(xs[0]);
  g.c = to_int(xs[1]);
  g.k = to_int(weights.dim(0));
  if (conv.op == OpKind::kLinear) return g;
  const auto& a = conv.attr<ConvAttrs>();
  g.h = to_int(xs[2]);
  g.w = to_int(xs[3]);
  g.r = to_int(a.kernel[0]);
  g.s = to_int(a.kernel[1]);
  g.out_h = to_int(y_shape[2]);
  g.out_w = to_int(y_shape[3]);
  g.pad_h = to_int(a.padding[0]);
  g.pad_w = to_int(a.padding[1]);
  g.stride_h = to_int(a.stride[0]);
  g.stride_w = to_int(a.stride[1]);
  g.dilation_h = to_int(a.dilation[0]);
  g.dilation_w = to_int(a.dilation[1]);
  g.groups = to_int(a.groups);
  return g;
}

Tensor ProgramBuilder::bias_of(const Node& conv, std::int64_t count) const {
  return conv.inputs.size() > 2 ? constant(conv.inputs[2]) : Tensor(DType::kF32, {count});
}

// Weights as the kernels read them: E4M3 or int8 codes (exact: they came from those codes) or the storage
// type.
void* ProgramBuilder::upload_weights(const ConvLayer& layer, const Tensor& weights) {
  if (layer.int8) return keep(upload_bytes(weights.to(DType::kI8)));
  return keep(layer.fp8 ? upload_bytes(weights.to(DType::kF8E4M3)) : upload(weights, elem_));
}

// y = (sum of code products) * input scale * weight scale[k] + bias (FP8 and int8 alike).
void ProgramBuilder::add_fp8_scales(const Node& conv, const Tensor& weight_scales, ConvLayer& layer) {
  const float input_scale = graph_.node(graph_.value(conv.inputs[0]).producer).attr<QuantizeAttrs>().scale;
  const Tensor scale = fp8_output_scales(input_scale, weight_scales, layer.geometry.k);
  layer.buffers.scale = static_cast<const float*>(keep(upload(scale, Elem::kF32)));
  layer.buffers.accumulator = static_cast<float*>(program_->fp8_accumulator.data());
}

void ProgramBuilder::add_conv_layer(const Node& conv, NodeId reported, Activation activation,
                                    Residual residual, NodeId producer) {
  const Shape& y_shape = shape(graph_.node(producer).output);
  ConvLayer layer;
  layer.node = &conv;
  layer.reported = reported;
  layer.name = graph_.node(reported).name;
  layer.linear = conv.op == OpKind::kLinear;
  layer.fp8 = conv.precision == Precision::kF8;
  layer.int8 = conv.precision == Precision::kI8;
  const bool quantized = layer.fp8 || layer.int8;
  // A quantized layer's weights: the codes and per-channel scales its dequantize point holds.
  const Node* dequantize = quantized ? &graph_.node(graph_.value(conv.inputs[1]).producer) : nullptr;
  const Tensor& weight = quantized ? constant(dequantize->inputs[0]) : constant(conv.inputs[1]);
  layer.geometry = conv_geometry(conv, weight, y_shape);
  layer.geometry.x_pitch = to_int(pitch(conv.inputs[0]));
  layer.geometry.y_pitch = to_int(pitch(graph_.node(producer).output));
  layer.weights = layer.linear ? weight.to(DType::kF32) : to_krsc(weight);
  layer.buffers.x = ptr(conv.inputs[0]);
  layer.buffers.weight = upload_weights(layer, layer.weights);
  layer.bias = bias_of(conv, layer.geometry.k).to(DType::kF32);
  layer.buffers.bias = keep(upload(layer.bias, quantized ? Elem::kF32 : elem_));
  if (quantized) add_fp8_scales(conv, constant(dequantize->inputs[1]), layer);
  layer.buffers.residual = residual.data;
  layer.buffers.residual_codes_scale = residual.codes_scale;
  layer.buffers.residual_int8 = residual.int8;
  // An unfused fp16 convolution writes y before its epilogue kernel reads it; an FP8 or int8 one runs on
  // a kernel with the epilogue fused, so its y is needed only where someone besides the fused quantize
  // points reads it.
  layer.buffers.y = quantized ? value_out(producer) : ptr(graph_.node(producer).output);
  layer.buffers.codes = codes_out(producer);
  layer.producer = producer;
  layer.codes = layer.buffers.codes.codes != nullptr;
  layer.activation = activation;
  layer.residual = residual.data != nullptr;
  add_layer_step(layer, choose_candidate(layer));
}

}  // namespace kiln::cuda
