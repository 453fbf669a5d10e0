// kiln's depthwise convolution kernel (one filter per channel, channel multiplier 1, as EfficientNet's
// conv_dw layers are) on NHWC, with its epilogue: y = act(conv(x) + bias (+ residual)), accumulated in f32
// and rounded to the storage type once. See kernel_types.h.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct DepthwiseShape {
  int n, c, in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

// x [n, in_h, in_w, c], weight [kernel_h, kernel_w, c] (taps outermost, so that neighbouring channels'
// weights are neighbours), bias [c], residual (may be null) and y [n, out_h, out_w, c], all of type e.
cudaError_t depthwise_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                           Elem e, const DepthwiseShape& shape, Act act, cudaStream_t stream);

}  // namespace kiln::cuda
