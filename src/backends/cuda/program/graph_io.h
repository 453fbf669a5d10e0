// Where a captured CUDA graph reads its inputs and writes its outputs. Every program starts with one
// conversion kernel per input (f32 NCHW -> the arena's NHWC) and ends with one per output (back to f32
// NCHW); their only argument is a LayoutArgs (layout_kernels.h). A host run points them at the program's
// own staging buffers; a device run points them at the caller's buffers, so the graph reads and writes
// those directly (no copies). Pointing is a host-side update of the instantiated graph
// (cudaGraphExecKernelNodeSetParams), made only when a pointer changes; launches already enqueued keep
// the pointers they were launched with.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <vector>

#include "backends/cuda/kernels/layout_kernels.h"

namespace kiln::cuda {

// A step converting graph input `index` (its x is the input) or graph output `index` (its y is the output).
struct IoBinding {
  bool output = false;
  std::size_t index = 0;
  LayoutArgs args;  // with the program's own buffers
};

class GraphIo {
 public:
  // During capture, right after the step bound by `binding` was enqueued on the capturing `stream`: finds
  // the kernel node it made.
  void record(const IoBinding& binding, cudaStream_t stream);
  // The caller's buffers, one per graph input and output, for the next launches of `exec`.
  void point_at(cudaGraphExec_t exec, std::span<const void* const> inputs, std::span<void* const> outputs);
  // The program's own buffers again.
  void point_at_own(cudaGraphExec_t exec);

 private:
  struct Conversion {
    IoBinding binding;
    cudaGraphNode_t node = nullptr;
    cudaKernelNodeParams launch{};  // the kernel, grid, block and shared memory of the node
    LayoutArgs current;             // what the instantiated graph runs with now
  };
  void set(cudaGraphExec_t exec, Conversion& conversion, const LayoutArgs& args);

  std::vector<Conversion> conversions_;
};

}  // namespace kiln::cuda
