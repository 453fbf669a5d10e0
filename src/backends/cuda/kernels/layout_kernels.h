// The CUDA kernels that move tensors between the caller's layout and the backend's (see kernel_types.h),
// and the pattern tactic timing runs on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// Fills `count` elements with a fixed pseudo-random pattern in [-1, 1] (tactic timing never runs on zeros).
cudaError_t fill_pattern(void* x, Elem e, std::int64_t count, cudaStream_t stream);

// One conversion between f32 NCHW [n, c, hw] (the caller's layout) and NHWC [n, hw, c] of element type e
// (the arena's). It is the conversion kernel's only argument, so the node of a CUDA graph that runs it
// can be pointed at other buffers by setting this struct anew (graph_io.h).
struct LayoutArgs {
  const void* x = nullptr;
  void* y = nullptr;
  Elem e = Elem::kF32;
  int n = 0, c = 0, hw = 0;
};

// x f32 NCHW -> y NHWC; and back (x NHWC -> y f32 NCHW). One kernel launch each.
cudaError_t nchw_f32_to_nhwc(const LayoutArgs& a, cudaStream_t stream);
cudaError_t nhwc_to_nchw_f32(const LayoutArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda
