// kiln's convolution kernel for few input channels (an RGB stem: 3 channels in, up to a few hundred out)
// on NHWC, with its epilogue: y = act(conv(x) + bias (+ residual)), accumulated in f32 and rounded to the
// storage type once. Tensor-core convolutions pad such inputs to 8 or more channels and run far below
// the memory bound; this kernel stages the weights and the input rows a tile of output pixels reads in
// shared memory (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

struct NarrowConvShape {
  int n, c, in_h, in_w, k, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

// The most input channels, output channels and weights (kernel_h * kernel_w * c * k, held in shared memory
// as f32) the kernel takes, and the shared memory a block uses at most (48 KiB: what a block has without
// opting in), weights and input rows together.
inline constexpr int kNarrowMaxChannels = 8;
inline constexpr int kNarrowMaxOutputs = 256;
inline constexpr int kNarrowMaxWeights = 8192;
inline constexpr int kNarrowMaxSharedFloats = 12288;

// Whether narrow_conv() computes `shape`: dense (the caller's part), within the limits above, the smallest
// tile's input rows beside the weights in shared memory.
bool narrow_conv_takes(const NarrowConvShape& shape);

// x [n, in_h, in_w, c], weight [kernel_h, kernel_w, c, k] (output channel fastest: narrow_conv_taps()),
// bias [k], residual (may be null) and y [n, out_h, out_w, k], all of type e. Shapes beyond the limits above
// return cudaErrorInvalidConfiguration.
cudaError_t narrow_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                        Elem e, const NarrowConvShape& shape, Act act, cudaStream_t stream);

// RGB stems (3 channels in, 3x3 without dilation, 16 or 32 outputs, no residual: YOLOv10's, EfficientNet's,
// the deep stems of ResNet-D and ResNeSt) have a kernel of their own that takes its weights as a launch
// argument: `taps` [3, 3, 3, k] (narrow_conv_taps()) and `bias` [k] are host f32 arrays, copied at the
// launch (a captured graph keeps the copy). x and y as for narrow_conv(); other shapes return
// cudaErrorInvalidConfiguration.
bool narrow_conv_is_stem(const NarrowConvShape& shape, bool residual);
cudaError_t stem_conv(const void* x, const float* taps, const float* bias, void* y, Elem e,
                      const NarrowConvShape& shape, Act act, cudaStream_t stream);

}  // namespace kiln::cuda
