// Pooling CUDA kernels on NHWC tensors (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct PoolShape {
  int n, c, in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool count_include_pad;
};
// With `codes`, also y's E4M3 codes (y may then be null).
cudaError_t max_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream,
                     const CodesOut& codes = {});
cudaError_t avg_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream,
                     const CodesOut& codes = {});

// A cascade of `outputs` (2 or 3) stride-1 max pools of one odd kernel with "same" padding (radius =
// kernel / 2), as SPPF chains them: output j is the pool of output j - 1, which is the max over the window
// of radius (j + 1) * radius of x, clipped to the image; one launch writes them all, each image's channels
// held in shared memory (at most kPoolCascadeMaxPixels pixels per image). x and each y may be channel views
// (pitch: elements between neighbouring pixels; 0 for packed).
inline constexpr int kPoolCascadeMaxPixels = 768;
struct PoolCascade {
  const void* x = nullptr;
  std::int64_t x_pitch = 0;
  void* y[3] = {nullptr, nullptr, nullptr};
  std::int64_t y_pitch[3] = {0, 0, 0};
  int outputs = 0;
  int n = 0, c = 0, h = 0, w = 0, radius = 0;
};
cudaError_t max_pool_cascade(const PoolCascade& cascade, Elem e, cudaStream_t stream);

// Global average pool of the radix sum: x [n, hw, radix * c] -> y [n, c] (radix 1: a plain global pool),
// and with `codes` y's E4M3 codes (y may then be null).
// `partial` is a scratch of radix_global_pool_scratch() bytes (per-split sums, then block counters) that
// must hold zeros before the first run; the kernel leaves its counters at zero again. The splits' sums
// are added in a fixed order: the result does not depend on how the blocks were scheduled.
std::size_t radix_global_pool_scratch(Elem e, int n, int hw, int c);
cudaError_t radix_global_pool(const void* x, void* y, float* partial, Elem e, int n, int hw, int radix, int c,
                              cudaStream_t stream, const CodesOut& codes = {});

}  // namespace kiln::cuda
