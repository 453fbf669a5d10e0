// Elementwise CUDA kernels over NHWC rows x channels (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

// y = act(a + b (+ bias per channel)) over rows x channels; b and bias may be null; y may alias a.
cudaError_t add_bias_act(const void* a, const void* b, const void* bias, void* y, Elem e, std::int64_t rows,
                         int channels, Act act, cudaStream_t stream);

// y = x * scale[c] + shift[c] (an unfolded batch norm; scale and shift are f32).
cudaError_t scale_shift(const void* x, const float* scale, const float* shift, void* y, Elem e,
                        std::int64_t rows, int channels, cudaStream_t stream);

}  // namespace kiln::cuda
