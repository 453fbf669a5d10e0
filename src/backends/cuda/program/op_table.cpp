#include "backends/cuda/program/op_table.h"

#include "backends/cuda/kernels/attention_kernels.h"
#include "backends/cuda/kernels/detect_select_kernels.h"
#include "backends/cuda/program/program_builder.h"
#include "core/error.h"
#include "passes/rewrite_util.h"

namespace kiln::cuda {
namespace {

bool is_constant(const Graph& graph, ValueId v) { return graph.value(v).is_constant(); }
std::size_t rank_of(const Graph& graph, ValueId v) { return graph.value(v).shape.size(); }

const Node* producer_of(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  return value.producer == kNoNode ? nullptr : &graph.node(value.producer);
}

// The kernels see a tensor as rows (N * H * W) of channels: [N, C] or NHWC [N, C, H, W].
std::string rows_reason(const Graph& graph, ValueId v) {
  const std::size_t rank = rank_of(graph, v);
  if (rank == 2 || rank == 4) return {};
  return cat("expects [N, C] or [N, C, H, W] tensors, got rank ", rank);
}

std::string image_reason(const Graph& graph, ValueId v) {
  return rank_of(graph, v) == 4 ? std::string()
                                : cat("expects an [N, C, H, W] input, got rank ", rank_of(graph, v));
}

// One vector of channels per image: [N, C] or [N, C, 1, 1] (NHWC and NCHW hold it alike).
std::string vector_reason(const Graph& graph, ValueId v) {
  const Shape& s = graph.value(v).shape;
  if (s.size() == 2 || (s.size() == 4 && s[2] == 1 && s[3] == 1)) return {};
  return cat("expects one vector per image ([N, C] or [N, C, 1, 1]), got ", shape_str(s));
}

std::string constants_reason(const Graph& graph, const Node& node, std::size_t first, const char* what) {
  for (std::size_t i = first; i < node.inputs.size(); ++i) {
    if (!is_constant(graph, node.inputs[i])) return cat(what, " must be constants");
  }
  return {};
}

// A quantized convolution as quant/fp8_rewrite.h makes it: its input through a quantize point, its
// weights from a dequantize point. `what` names the precision.
std::string quantized_conv_reason(const Graph& graph, const Node& node, const char* what) {
  const Node* quantize = producer_of(graph, node.inputs[0]);
  if (quantize == nullptr || quantize->op != OpKind::kQuantize)
    return cat("an ", what, " convolution must read its input through a quantize point");
  const Node* dequantize = producer_of(graph, node.inputs[1]);
  if (dequantize == nullptr || dequantize->op != OpKind::kDequantize)
    return cat("an ", what, " convolution's weights must come from a dequantize point");
  return {};
}

// An FP8 convolution in shapes cuDNN's FP8 kernels take.
std::string fp8_conv_reason(const Graph& graph, const Node& node) {
  if (std::string r = quantized_conv_reason(graph, node, "FP8"); !r.empty()) return r;
  const Shape& codes = graph.value(producer_of(graph, node.inputs[1])->inputs[0]).shape;
  const std::int64_t in = codes[1] * node.attr<ConvAttrs>().groups, out = codes[0];
  if (in % 16 != 0 || out % 16 != 0)
    return cat("cuDNN's FP8 convolutions need channel counts that are multiples of 16, this one has ", in,
               " in and ", out, " out");
  return {};
}

// An int8 convolution runs on kiln's Hopper kernel only (the backend refuses int8 plans off Hopper):
// undilated, in rows of 16-byte multiples, with a window its im2col copies express, and for groups, whole
// 64-channel tiles of output channels a group (gemm_conv_kernels.h).
std::string int8_conv_reason(const Graph& graph, const Node& node) {
  if (std::string r = quantized_conv_reason(graph, node, "int8"); !r.empty()) return r;
  const auto& a = node.attr<ConvAttrs>();
  const Shape& codes = graph.value(producer_of(graph, node.inputs[1])->inputs[0]).shape;
  if (a.groups != 1 && codes[0] % (64 * a.groups) != 0)
    return cat(
        "kiln's grouped int8 convolutions need a multiple of 64 output channels a group, this one has ",
        codes[0], " in ", a.groups, " groups");
  if (a.dilation[0] != 1 || a.dilation[1] != 1) return "kiln's int8 convolutions take no dilation";
  if (a.padding[0] >= a.kernel[0] || a.padding[1] >= a.kernel[1] || a.stride[0] > 8 || a.stride[1] > 8)
    return "kiln's int8 convolutions take padding below the kernel size and strides up to 8";
  if (codes[1] % 16 != 0 || codes[0] % 16 != 0)
    return cat("kiln's int8 convolutions need channel counts that are multiples of 16, this one has ",
               codes[1], a.groups != 1 ? " in a group" : " in", " and ", codes[0], " out");
  return {};
}

std::string conv_reason(const Graph& graph, const Node& node) {
  if (std::string r = image_reason(graph, node.inputs[0]); !r.empty()) return r;
  const auto& padding = node.attr<ConvAttrs>().padding;
  if (padding[0] != padding[2] || padding[1] != padding[3]) return "asymmetric convolution padding";
  if (node.precision == Precision::kF8) return fp8_conv_reason(graph, node);
  if (node.precision == Precision::kI8) return int8_conv_reason(graph, node);
  if (!is_constant(graph, node.inputs[1])) return "convolution weights must be constants";
  if (node.inputs.size() > 2 && !is_constant(graph, node.inputs[2]))
    return "convolution bias must be a constant";
  return {};
}

std::string linear_reason(const Graph& graph, const Node& node) {
  if (rank_of(graph, node.inputs[0]) != 2)
    return cat("expects an [N, C] input, got rank ", rank_of(graph, node.inputs[0]));
  if (!is_constant(graph, node.inputs[1])) return "linear weights must be constants";
  if (node.inputs.size() > 2 && !is_constant(graph, node.inputs[2])) return "linear bias must be a constant";
  return {};
}

std::string batch_norm_reason(const Graph& graph, const Node& node) {
  if (std::string r = rows_reason(graph, node.inputs[0]); !r.empty()) return r;
  return constants_reason(graph, node, 1, "batch-norm parameters");
}

std::string add_reason(const Graph& graph, const Node& node) {
  if (std::string r = rows_reason(graph, node.inputs[0]); !r.empty()) return r;
  if (is_constant(graph, node.inputs[0]) || is_constant(graph, node.inputs[1])) return "add of a constant";
  return {};
}

// Squeeze-excite's gate: an image scaled by one computed vector per image.
std::string channel_scale_reason(const Graph& graph, const Node& node) {
  if (std::string r = image_reason(graph, node.inputs[0]); !r.empty()) return r;
  if (std::string r = vector_reason(graph, node.inputs[1]); !r.empty()) return r;
  if (is_constant(graph, node.inputs[0]) || is_constant(graph, node.inputs[1]))
    return "channel scale of a constant";
  return {};
}

std::string rows_input_reason(const Graph& graph, const Node& node) {
  return rows_reason(graph, node.inputs[0]);
}
std::string image_input_reason(const Graph& graph, const Node& node) {
  return image_reason(graph, node.inputs[0]);
}

// In NHWC a flatten is free only where there is nothing to reorder: one pixel per image.
std::string flatten_reason(const Graph& graph, const Node& node) {
  return vector_reason(graph, node.inputs[0]);
}
std::string radix_softmax_reason(const Graph& graph, const Node& node) {
  return vector_reason(graph, node.inputs[0]);
}

std::string radix_weighted_sum_reason(const Graph& graph, const Node& node) {
  if (std::string r = image_reason(graph, node.inputs[0]); !r.empty()) return r;
  return vector_reason(graph, node.inputs[1]);
}

// Why a reader of `value` cannot take it: each must be a convolution of `precision` reading it as input
// `slot`.
std::string quantized_readers_reason(const Graph& graph, ValueId value, std::size_t slot, Precision precision,
                                     const char* what) {
  const auto consumers = graph.consumers();
  for (const NodeId reader : consumers[static_cast<std::size_t>(value)]) {
    const Node& r = graph.node(reader);
    if (r.op != OpKind::kConv2d || r.precision != precision || r.inputs[slot] != value)
      return cat(what, " read by '", r.name, "', which is no ", precision_name(precision), " convolution");
  }
  return {};
}

// A quantize point writes E4M3 or int8 codes, which FP8 or int8 convolutions read as their input and
// adds as a residual (the add computed with a convolution: elementwise_steps.cpp).
std::string quantize_reason(const Graph& graph, const Node& node) {
  if (is_constant(graph, node.inputs[0])) return "quantize of a constant";
  if (node.attr<QuantizeAttrs>().per_channel())
    return "per-channel scales (int8 inputs of depthwise convolutions, which cuda does not run in int8)";
  const bool int8 = node.attr<QuantizeAttrs>().int8;
  const char* codes = int8 ? "int8 codes" : "E4M3 codes";
  if (passes::is_graph_output(graph, node.output)) return cat(codes, " as a graph output");
  const Precision precision = int8 ? Precision::kI8 : Precision::kF8;
  const auto consumers = graph.consumers();
  for (const NodeId reader : consumers[static_cast<std::size_t>(node.output)]) {
    const Node& r = graph.node(reader);
    const bool quantized_input =
        r.op == OpKind::kConv2d && r.precision == precision && r.inputs[0] == node.output;
    if (!quantized_input && r.op != OpKind::kAdd)
      return cat(codes, " read by '", r.name, "', which is neither an ", int8 ? "int8" : "FP8",
                 " convolution nor an add");
  }
  return {};
}

// Folded into the FP8 or int8 convolutions that read it (the grid of its codes).
std::string dequantize_reason(const Graph& graph, const Node& node) {
  if (!constants_reason(graph, node, 0, "").empty()) return "dequantize of a computed tensor";
  // The codes reach backends widened to f32 (exactly), so their readers say which grid they are on.
  const auto readers = graph.consumers()[static_cast<std::size_t>(node.output)];
  const Precision grid = readers.empty() ? Precision::kF8 : graph.node(readers.front()).precision;
  return quantized_readers_reason(
      graph, node.output, 1, grid == Precision::kI8 ? Precision::kI8 : Precision::kF8, "dequantized weights");
}

// YOLOv10's operators read computed tensors of rank 2 to 4, stored channels last (data_movement_steps.cpp).
std::string stored_reason(const Graph& graph, ValueId v) {
  if (is_constant(graph, v)) return "reads a constant";
  const std::size_t rank = rank_of(graph, v);
  return rank >= 2 && rank <= 4 ? std::string() : cat("expects a tensor of rank 2 to 4, got rank ", rank);
}

std::string concat_reason(const Graph& graph, const Node& node) {
  for (const ValueId input : node.inputs) {
    if (std::string r = stored_reason(graph, input); !r.empty()) return r;
  }
  return {};
}

std::string stored_input_reason(const Graph& graph, const Node& node) {
  return stored_reason(graph, node.inputs[0]);
}

std::string stored_image_reason(const Graph& graph, const Node& node) {
  if (std::string r = stored_reason(graph, node.inputs[0]); !r.empty()) return r;
  return image_reason(graph, node.inputs[0]);
}

std::string attention_reason(const Graph& graph, const Node& node) {
  if (std::string r = stored_image_reason(graph, node); !r.empty()) return r;
  const auto& a = node.attr<AttentionAttrs>();
  if (a.key_dim + a.head_dim > kAttentionMaxWidth)
    return cat("key_dim + head_dim is ", a.key_dim + a.head_dim, "; the CUDA kernel holds at most ",
               kAttentionMaxWidth);
  return {};
}

std::string detect_select_reason(const Graph& graph, const Node& node) {
  if (std::string r = stored_input_reason(graph, node); !r.empty()) return r;
  const std::int64_t max_det = node.attr<DetectSelectAttrs>().max_det;
  if (max_det > kDetectSelectMaxDet)
    return cat("max_det is ", max_det, "; the CUDA kernel sorts at most ", kDetectSelectMaxDet);
  return {};
}

}  // namespace

const CudaOp* find_cuda_op(OpKind op) {
  using B = ProgramBuilder;
  static const CudaOp kTable[] = {
      {OpKind::kConv2d, conv_reason, &B::add_conv2d},
      {OpKind::kLinear, linear_reason, &B::add_linear},
      {OpKind::kBatchNorm, batch_norm_reason, &B::add_batch_norm},
      {OpKind::kActivation, rows_input_reason, &B::add_activation},
      {OpKind::kAdd, add_reason, &B::add_add},
      {OpKind::kChannelScale, channel_scale_reason, &B::add_channel_scale},
      {OpKind::kMaxPool2d, image_input_reason, &B::add_pool},
      {OpKind::kAvgPool2d, image_input_reason, &B::add_pool},
      {OpKind::kGlobalAvgPool, image_input_reason, &B::add_global_pool},
      {OpKind::kFlatten, flatten_reason, nullptr},  // NHWC [N, C, 1, 1] is already [N, C]
      {OpKind::kRadixSum, rows_input_reason, &B::add_radix_sum},
      {OpKind::kRadixSoftmax, radix_softmax_reason, &B::add_radix_softmax},
      {OpKind::kRadixWeightedSum, radix_weighted_sum_reason, &B::add_radix_weighted_sum},
      {OpKind::kQuantize, quantize_reason, &B::add_quantize},
      {OpKind::kDequantize, dequantize_reason, nullptr},  // its FP8 convolutions took the codes and scales
      // YOLOv10's operators.
      {OpKind::kConcat, concat_reason, &B::add_concat},
      {OpKind::kChannelSlice, stored_input_reason, &B::add_channel_slice},
      {OpKind::kUpsample, stored_image_reason, &B::add_upsample},
      {OpKind::kAttention, attention_reason, &B::add_attention},
      {OpKind::kDetectDecode, stored_image_reason, &B::add_detect_decode},
      {OpKind::kDetectSelect, detect_select_reason, &B::add_detect_select},
  };
  for (const CudaOp& entry : kTable) {
    if (entry.op == op) return &entry;
  }
  return nullptr;
}

std::string unsupported_reason(const Graph& graph, const Node& node) {
  if (is_quantized(node.precision) && node.op != OpKind::kConv2d)
    return cat("only convolutions run in ", precision_name(node.precision), " on the cuda backend");
  const CudaOp* entry = find_cuda_op(node.op);
  if (entry == nullptr) return cat(op_kind_name(node.op), " has no CUDA kernel yet");
  return entry->unsupported(graph, node);
}

}  // namespace kiln::cuda
