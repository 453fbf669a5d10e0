#include "backends/cuda/program/graph_io.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

void GraphIo::record(const IoBinding& binding, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* last = nullptr;
  std::size_t count = 0;
  check(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &last, nullptr, &count),
        "reading the graph capture");
  // One kernel launch per conversion: the capture's frontier is that launch's node alone.
  require(status == cudaStreamCaptureStatusActive && count == 1, "cuda backend: the ",
          binding.output ? "output" : "input", " conversion is not one captured node");
  cudaGraphNodeType type{};
  check(cudaGraphNodeGetType(last[0], &type), "reading a graph node's type");
  require(type == cudaGraphNodeTypeKernel, "cuda backend: the ", binding.output ? "output" : "input",
          " conversion is not a kernel node");
  Conversion conversion{binding, last[0], {}, binding.args};
  check(cudaGraphKernelNodeGetParams(conversion.node, &conversion.launch), "reading a kernel node");
  // The arguments the node holds stay the node's: each update passes its own.
  conversion.launch.kernelParams = nullptr;
  conversion.launch.extra = nullptr;
  conversions_.push_back(conversion);
}

void GraphIo::set(cudaGraphExec_t exec, Conversion& conversion, const LayoutArgs& args) {
  if (args.x == conversion.current.x && args.y == conversion.current.y) return;
  LayoutArgs value = args;
  void* arguments[] = {&value};
  cudaKernelNodeParams params = conversion.launch;
  params.kernelParams = arguments;
  check(cudaGraphExecKernelNodeSetParams(exec, conversion.node, &params),
        "pointing the CUDA graph at other buffers");
  conversion.current = args;
}

void GraphIo::point_at(cudaGraphExec_t exec, std::span<const void* const> inputs,
                       std::span<void* const> outputs) {
  for (Conversion& conversion : conversions_) {
    LayoutArgs args = conversion.binding.args;
    const std::size_t i = conversion.binding.index;
    if (conversion.binding.output) {
      require(i < outputs.size(), "cuda backend: no buffer for output ", i);
      args.y = outputs[i];
    } else {
      require(i < inputs.size(), "cuda backend: no buffer for input ", i);
      args.x = inputs[i];
    }
    set(exec, conversion, args);
  }
}

void GraphIo::point_at_own(cudaGraphExec_t exec) {
  for (Conversion& conversion : conversions_) set(exec, conversion, conversion.binding.args);
}

}  // namespace kiln::cuda
