#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/program.h"
#include "core/error.h"

namespace kiln {
namespace {

bool is_constant(const Graph& graph, ValueId v) { return graph.value(v).is_constant(); }

bool symmetric(const std::array<std::int64_t, 4>& padding) {
  return padding[0] == padding[2] && padding[1] == padding[3];
}

const Node* producer_of(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  return value.producer == kNoNode ? nullptr : &graph.node(value.producer);
}

// An FP8 convolution as quant/fp8_rewrite.h makes it, in shapes cuDNN's FP8 kernels take.
std::string fp8_conv_reason(const Graph& graph, const Node& node) {
  const Node* quantize = producer_of(graph, node.inputs[0]);
  if (quantize == nullptr || quantize->op != OpKind::kQuantize)
    return "an FP8 convolution must read its input through a quantize point";
  const Node* dequantize = producer_of(graph, node.inputs[1]);
  if (dequantize == nullptr || dequantize->op != OpKind::kDequantize)
    return "an FP8 convolution's weights must come from a dequantize point";
  const Shape& codes = graph.value(dequantize->inputs[0]).shape;
  const std::int64_t in = codes[1] * node.attr<ConvAttrs>().groups, out = codes[0];
  if (in % 16 != 0 || out % 16 != 0)
    return cat("cuDNN's FP8 convolutions need channel counts that are multiples of 16, this one has ", in,
               " in and ", out, " out; keep it out of the recipe");
  return {};
}

// Why the backend cannot run `node`, or empty when it can.
std::string unsupported_reason(const Graph& graph, const Node& node) {
  if (node.precision == Precision::kF8 && node.op != OpKind::kConv2d)
    return "only convolutions run in FP8 on the cuda backend";
  switch (node.op) {
    case OpKind::kConv2d:
      if (!symmetric(node.attr<ConvAttrs>().padding)) return "asymmetric convolution padding";
      if (node.precision == Precision::kF8) return fp8_conv_reason(graph, node);
      if (!is_constant(graph, node.inputs[1])) return "convolution weights must be constants";
      if (node.inputs.size() > 2 && !is_constant(graph, node.inputs[2]))
        return "convolution bias must be a constant";
      return {};
    case OpKind::kLinear:
      if (!is_constant(graph, node.inputs[1])) return "linear weights must be constants";
      if (node.inputs.size() > 2 && !is_constant(graph, node.inputs[2]))
        return "linear bias must be a constant";
      return {};
    case OpKind::kBatchNorm:
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (!is_constant(graph, node.inputs[i])) return "batch-norm parameters must be constants";
      }
      return {};
    case OpKind::kAdd:
      if (is_constant(graph, node.inputs[0]) || is_constant(graph, node.inputs[1]))
        return "add of a constant";
      return {};
    case OpKind::kActivation:
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool:
    case OpKind::kFlatten:
    case OpKind::kRadixSum:
    case OpKind::kRadixSoftmax:
    case OpKind::kRadixWeightedSum:
      return {};
    case OpKind::kQuantize:
      if (is_constant(graph, node.inputs[0])) return "quantize of a constant";
      return {};
    case OpKind::kDequantize: {
      // Folded into the FP8 convolutions that read it.
      for (const ValueId v : node.inputs) {
        if (!is_constant(graph, v)) return "dequantize of a computed tensor";
      }
      const auto consumers = graph.consumers();
      for (const NodeId reader : consumers[static_cast<std::size_t>(node.output)]) {
        const Node& r = graph.node(reader);
        if (r.op != OpKind::kConv2d || r.precision != Precision::kF8 || r.inputs[1] != node.output)
          return cat("dequantized weights read by '", r.name, "', which is no FP8 convolution");
      }
      return {};
    }
    case OpKind::kChannelScale:
    case OpKind::kConcat:
    case OpKind::kChannelSlice:
    case OpKind::kUpsample:
    case OpKind::kAttention:
    case OpKind::kDetectDecode:
      return cat(op_kind_name(node.op), " (EfficientNet / YOLOv10) has no CUDA kernel yet");
  }
  return "unknown operator";
}

}  // namespace

bool CudaBackend::supports(const Graph& graph, const Node& node) const {
  return unsupported_reason(graph, node).empty();
}

std::string CudaBackend::unsupported_reason(const Graph& graph, const Node& node) const {
  return kiln::unsupported_reason(graph, node);
}

std::unique_ptr<CompiledModel> CudaBackend::compile(const Graph& graph, const CompileOptions& options) const {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) fail("no CUDA device: ", cudaGetErrorString(status));
  if (devices == 0) fail("no CUDA device: the driver reports none");
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    const std::string reason = unsupported_reason(graph, node);
    require(reason.empty(), "cuda backend: layer '", node.name, "' (", op_kind_name(node.op), "): ", reason,
            "; or run the plan on --backend cpu");
  }
  return std::make_unique<cuda::CudaModel>(graph, options);
}

}  // namespace kiln
