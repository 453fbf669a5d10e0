// The layout conversions and the timing fill (see layout_kernels.h).
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/layout_kernels.h"

namespace kiln::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* x, std::int64_t count) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  unsigned h = static_cast<unsigned>(i) * 2654435761u + 0x9e3779b9u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  x[i] = from_float<T>(static_cast<float>(h & 0xffffu) / 32767.5f - 1.0f);
}

template <typename T>
__global__ void nchw_to_nhwc_kernel(const float* x, T* y, int n, int c, int hw) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(n) * c * hw;
  if (i >= total) return;
  const std::int64_t ch = i % c, pixel = (i / c) % hw, image = i / (static_cast<std::int64_t>(c) * hw);
  y[i] = from_float<T>(x[(image * c + ch) * hw + pixel]);
}

template <typename T>
__global__ void nhwc_to_nchw_kernel(const T* x, float* y, int n, int c, int hw) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(n) * c * hw;
  if (i >= total) return;
  const std::int64_t pixel = i % hw, ch = (i / hw) % c, image = i / (static_cast<std::int64_t>(c) * hw);
  y[i] = to_float(x[(image * hw + pixel) * c + ch]);
}

}  // namespace

cudaError_t fill_pattern(void* x, Elem e, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (e == Elem::kF32) {
    fill_kernel<<<blocks_for(count), kBlock, 0, stream>>>(static_cast<float*>(x), count);
  } else {
    fill_kernel<<<blocks_for(count), kBlock, 0, stream>>>(static_cast<__half*>(x), count);
  }
  return cudaGetLastError();
}

cudaError_t nchw_f32_to_nhwc(const float* x, void* y, Elem e, int n, int c, int hw, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(n) * c * hw;
  if (e == Elem::kF32) {
    nchw_to_nhwc_kernel<<<blocks_for(total), kBlock, 0, stream>>>(x, static_cast<float*>(y), n, c, hw);
  } else {
    nchw_to_nhwc_kernel<<<blocks_for(total), kBlock, 0, stream>>>(x, static_cast<__half*>(y), n, c, hw);
  }
  return cudaGetLastError();
}

cudaError_t nhwc_to_nchw_f32(const void* x, Elem e, float* y, int n, int c, int hw, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(n) * c * hw;
  if (e == Elem::kF32) {
    nhwc_to_nchw_kernel<<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const float*>(x), y, n, c, hw);
  } else {
    nhwc_to_nchw_kernel<<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const __half*>(x), y, n, c, hw);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
