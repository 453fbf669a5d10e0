// Dot products of a few rows of a row-major matrix with one vector by one warp, every row's loads in
// flight together: a warp that took one row at a time waited a load latency per row, which made the
// small dense layers of squeeze-excite (tens of rows of at most a few thousand weights) latency-bound.
#pragma once

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {

// out[k] = W[first + k, :len] · vec for k < kRows, in every lane; W's rows `stride` elements apart, read
// in packs of V (V divides len and stride), vec f32 (shared memory). Rows at or past `rows` read the last
// row again (in bounds) and are the caller's to drop. Each lane adds the packs lane, lane + 32, ... in
// order, then the warp adds the lanes in a fixed order: the same bits run after run. Warps are the block's
// threads in linear order (x fastest), as the hardware forms them.
template <typename T, int V, int kRows>
__device__ void warp_dots(const T* w, int rows, std::int64_t stride, int len, int first, const float* vec,
                          float (&out)[kRows]) {
  const int lane = static_cast<int>((threadIdx.y * blockDim.x + threadIdx.x) % 32);
  const T* row[kRows];
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    row[k] = w + static_cast<std::int64_t>(min(first + k, rows - 1)) * stride;
    out[k] = 0.0f;
  }
  for (int p = lane; p < len / V; p += 32) {
    float wv[kRows][V];
#pragma unroll
    for (int k = 0; k < kRows; ++k) load<T, V>(row[k] + p * V, wv[k]);
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
#pragma unroll
      for (int i = 0; i < V; ++i) out[k] += wv[k][i] * vec[p * V + i];
    }
  }
#pragma unroll
  for (int k = 0; k < kRows; ++k) out[k] = warp_sum(out[k]);
}

}  // namespace kiln::cuda
