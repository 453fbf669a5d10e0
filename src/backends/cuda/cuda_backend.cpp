#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_options.h"
#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"
#include "backends/cuda/program/op_table.h"
#include "backends/cuda/program/program.h"
#include "core/error.h"

namespace kiln {

bool CudaBackend::supports(const Graph& graph, const Node& node) const {
  return cuda::unsupported_reason(graph, node).empty();
}

std::string CudaBackend::unsupported_reason(const Graph& graph, const Node& node) const {
  return cuda::unsupported_reason(graph, node);
}

// int8 convolutions run on kiln's Hopper kernel alone (its sm_90a code runs on compute capability 9.0 only).
std::string CudaBackend::precision_refusal(Precision precision) const {
  if (precision == Precision::kBf16) return "it has no bf16 kernels";
  if (precision != Precision::kI8 || cuda::hopper::hopper_gpu()) return {};
  int device = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess)
    return "its int8 convolutions run on kiln's Hopper kernel, and there is no CUDA device";
  return cat("its int8 convolutions run on kiln's Hopper kernel, which needs a compute capability 9.0 GPU (H100, "
             "H200); this one is ", p.name, " (", p.major, ".", p.minor, ")");
}

BackendOptions CudaBackend::resolve_options(const std::vector<std::string>& assignments) const {
  return cuda::cuda_option_values(cuda::parse_cuda_options(assignments));
}

std::string CudaBackend::options_help() const { return cuda::cuda_options_help(); }

std::unique_ptr<CompiledModel> CudaBackend::compile(const Graph& graph, const CompileOptions& options) const {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) fail("no CUDA device: ", cudaGetErrorString(status));
  if (devices == 0) fail("no CUDA device: the driver reports none");
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    const std::string reason = cuda::unsupported_reason(graph, node);
    require(reason.empty(), "cuda backend: layer '", node.name, "' (", op_kind_name(node.op), "): ", reason,
            "; or run the plan on --backend cpu");
  }
  return std::make_unique<cuda::CudaProgram>(graph, options);
}

}  // namespace kiln
