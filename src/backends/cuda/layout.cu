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
__global__ void nchw_to_nhwc_kernel(LayoutArgs a) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(a.n) * a.c * a.hw;
  if (i >= total) return;
  const std::int64_t ch = i % a.c, pixel = (i / a.c) % a.hw;
  const std::int64_t image = i / (static_cast<std::int64_t>(a.c) * a.hw);
  static_cast<T*>(a.y)[i] = from_float<T>(static_cast<const float*>(a.x)[(image * a.c + ch) * a.hw + pixel]);
}

template <typename T>
__global__ void nhwc_to_nchw_kernel(LayoutArgs a) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(a.n) * a.c * a.hw;
  if (i >= total) return;
  const std::int64_t pixel = i % a.hw, ch = (i / a.hw) % a.c;
  const std::int64_t image = i / (static_cast<std::int64_t>(a.c) * a.hw);
  static_cast<float*>(a.y)[i] = to_float(static_cast<const T*>(a.x)[(image * a.hw + pixel) * a.c + ch]);
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

cudaError_t nchw_f32_to_nhwc(const LayoutArgs& a, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(a.n) * a.c * a.hw;
  if (a.e == Elem::kF32) {
    nchw_to_nhwc_kernel<float><<<blocks_for(total), kBlock, 0, stream>>>(a);
  } else {
    nchw_to_nhwc_kernel<__half><<<blocks_for(total), kBlock, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

cudaError_t nhwc_to_nchw_f32(const LayoutArgs& a, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(a.n) * a.c * a.hw;
  if (a.e == Elem::kF32) {
    nhwc_to_nchw_kernel<float><<<blocks_for(total), kBlock, 0, stream>>>(a);
  } else {
    nhwc_to_nchw_kernel<__half><<<blocks_for(total), kBlock, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
