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

// Why the backend cannot run `node`, or empty when it can.
std::string unsupported_reason(const Graph& graph, const Node& node) {
  if (node.precision == Precision::kF8) return "FP8 layers are not supported by the cuda backend";
  switch (node.op) {
    case OpKind::kConv2d:
      if (!symmetric(node.attr<ConvAttrs>().padding)) return "asymmetric convolution padding";
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
    case OpKind::kDequantize:
      return "FP8 quantization points are not supported by the cuda backend";
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

std::unique_ptr<CompiledModel> CudaBackend::compile(const Graph& graph, const CompileOptions& options) const {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) fail("no CUDA device: ", cudaGetErrorString(status));
  if (devices == 0) fail("no CUDA device: the driver reports none");
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    const std::string reason = unsupported_reason(graph, node);
    require(reason.empty(), "cuda backend: layer '", node.name, "' (", op_kind_name(node.op), "): ", reason,
            "; build an fp16 or fp32 plan, or run it on --backend cpu");
  }
  return std::make_unique<cuda::CudaModel>(graph, options);
}

}  // namespace kiln
