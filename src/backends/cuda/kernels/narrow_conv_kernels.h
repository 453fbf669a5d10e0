// kiln's convolution kernel for RGB stems (3 channels in, 3x3 without dilation, 16 or 32 outputs, no
// residual: YOLOv10's, EfficientNet's, the deep stems of ResNet-D and ResNeSt) on NHWC, with its epilogue:
// y = act(conv(x) + bias), accumulated in f32 and rounded to the storage type once. Tensor-core
// convolutions pad such inputs to 8 or more channels and run far below the memory bound; this kernel
// computes every output of a pixel in one thread with its weights as a launch argument (see
// kernel_types.h). A general kernel for few input channels, its tile staged in shared memory, lost every
// race against cuDNN and is gone.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct NarrowConvShape {
  int n, c, in_h, in_w, k, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

// Whether stem_conv() computes `shape` (and a residual, which it never takes).
bool narrow_conv_is_stem(const NarrowConvShape& shape, bool residual);

// x [n, in_h, in_w, 3] and y [n, out_h, out_w, k] of type e; `taps` [3, 3, 3, k] (output channel fastest:
// narrow_conv_taps()) and `bias` [k] are host f32 arrays, copied at the launch (a captured graph keeps
// the copy). Other shapes return cudaErrorInvalidConfiguration.
cudaError_t stem_conv(const void* x, const float* taps, const float* bias, void* y, Elem e,
                      const NarrowConvShape& shape, Act act, cudaStream_t stream);

}  // namespace kiln::cuda
