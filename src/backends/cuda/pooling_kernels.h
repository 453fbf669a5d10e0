// Pooling CUDA kernels on NHWC tensors (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

struct PoolShape {
  int n, c, in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool count_include_pad;
};
// With `codes`, also y's E4M3 codes (y may then be null).
cudaError_t max_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream,
                     const E4m3Out& codes = {});
cudaError_t avg_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream,
                     const E4m3Out& codes = {});

// Global average pool of the radix sum: x [n, hw, radix * c] -> y [n, c] (radix 1: a plain global pool),
// and with `codes` y's E4M3 codes (y may then be null).
// `partial` is a scratch of radix_global_pool_scratch() bytes (per-split sums, then block counters) that
// must hold zeros before the first run; the kernel leaves its counters at zero again. The splits' sums
// are added in a fixed order: the result does not depend on how the blocks were scheduled.
std::size_t radix_global_pool_scratch(Elem e, int n, int hw, int c);
cudaError_t radix_global_pool(const void* x, void* y, float* partial, Elem e, int n, int hw, int radix, int c,
                              cudaStream_t stream, const E4m3Out& codes = {});

}  // namespace kiln::cuda
