// The CUDA kernels that move tensors between the caller's layout and the backend's (see kernel_types.h),
// and the pattern tactic timing runs on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

// Fills `count` elements with a fixed pseudo-random pattern in [-1, 1] (tactic timing never runs on zeros).
cudaError_t fill_pattern(void* x, Elem e, std::int64_t count, cudaStream_t stream);

// x f32 NCHW [n, c, hw] -> y NHWC [n, hw, c]; and back.
cudaError_t nchw_f32_to_nhwc(const float* x, void* y, Elem e, int n, int c, int hw, cudaStream_t stream);
cudaError_t nhwc_to_nchw_f32(const void* x, Elem e, float* y, int n, int c, int hw, cudaStream_t stream);

}  // namespace kiln::cuda
