// kiln's tensor-core convolution for fp16 layers of few channels (16 to a few hundred in and out, 1x1 or
// 3x3), as YOLOv10's and EfficientNet's early layers are: an implicit GEMM on mma.sync (16 x 8 x 16 tiles,
// f32 accumulation), NHWC, reading and writing channel views (channel_views.h) as packed tensors do, with
// its epilogue: y = act(conv(x) + bias (+ residual)), rounded to fp16 once. cuDNN's kernels for such layers
// tile 64 or more output channels and run several times above the memory bound on them (see
// docs/log/PERFORMANCE_LOG.md). See kernel_types.h.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct MmaConvShape {
  int n, c, in_h, in_w, k, out_h, out_w;
  int kernel, stride_h, stride_w, pad_h, pad_w;  // a square kernel of 1 or 3, no dilation
  // Elements between neighbouring pixels of x, y and the residual (c, k, k for packed tensors).
  int x_pitch, y_pitch, residual_pitch;
};

// How a launch divides the work: each warp computes `pixel_tiles` x 16 output pixels, each block
// `channel_tiles` x 8 output channels (a tactic: pick_tactic() times the variants).
struct MmaConvVariant {
  int pixel_tiles = 1;    // 1 or 2
  int channel_tiles = 2;  // 1, 2, 4 or 8
};

// Whether mma_conv() computes `shape` with `variant`: input channels a multiple of 16, output channels a
// multiple of the variant's 8 x channel_tiles, even pitches, a 1x1 or 3x3 kernel, and the block's weights
// within 48 KiB of shared memory.
bool mma_conv_takes(const MmaConvShape& shape, const MmaConvVariant& variant);

// `fragments`: the weights as mma_conv_fragments() (host_constants.h) orders them, fp16; `bias` [k] fp16;
// x, y and residual (may be null) fp16 with the shape's pitches, 4-byte aligned. Returns
// cudaErrorInvalidConfiguration for what mma_conv_takes() refuses and cudaErrorMisalignedAddress for
// misaligned buffers.
cudaError_t mma_conv(const void* x, const void* fragments, const void* bias, const void* residual, void* y,
                     const MmaConvShape& shape, const MmaConvVariant& variant, Act act, cudaStream_t stream);

}  // namespace kiln::cuda
