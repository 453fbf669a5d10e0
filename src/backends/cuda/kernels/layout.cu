// The layout conversions and the timing fill (see layout_kernels.h).
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/layout_kernels.h"

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

// One thread per pixel: it reads the pixel's value in each channel plane (a warp's reads of a plane are
// one run of 32 values) and writes its C values side by side (a warp's writes are one run of 32 * C). One
// thread per output value scattered each warp's reads over three planes, a fraction of the memory's
// bandwidth on large inputs. C 0: the channel count is a.c, not known when compiling.
template <typename T, int C>
__global__ void nchw_to_nhwc_kernel(LayoutArgs a) {
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (p >= static_cast<std::int64_t>(a.n) * a.hw) return;
  const int c = C > 0 ? C : a.c;
  const std::int64_t image = p / a.hw, pixel = p % a.hw;
  const float* __restrict__ x = static_cast<const float*>(a.x) + image * c * a.hw + pixel;
  T* __restrict__ y = static_cast<T*>(a.y) + p * c;
  if constexpr (C > 0) {
    float v[C];
#pragma unroll
    for (int ch = 0; ch < C; ++ch) v[ch] = __ldg(x + static_cast<std::int64_t>(ch) * a.hw);
#pragma unroll
    for (int ch = 0; ch < C; ++ch) y[ch] = from_float<T>(v[ch]);
  } else {
    for (int ch = 0; ch < c; ++ch) y[ch] = from_float<T>(__ldg(x + static_cast<std::int64_t>(ch) * a.hw));
  }
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

namespace {

template <typename T>
void launch_nchw_to_nhwc(const LayoutArgs& a, cudaStream_t stream) {
  const std::int64_t pixels = static_cast<std::int64_t>(a.n) * a.hw;
  if (a.c == 3) {  // images: the common case, unrolled
    nchw_to_nhwc_kernel<T, 3><<<blocks_for(pixels), kBlock, 0, stream>>>(a);
  } else {
    nchw_to_nhwc_kernel<T, 0><<<blocks_for(pixels), kBlock, 0, stream>>>(a);
  }
}

}  // namespace

cudaError_t nchw_f32_to_nhwc(const LayoutArgs& a, cudaStream_t stream) {
  if (a.e == Elem::kF32) {
    launch_nchw_to_nhwc<float>(a, stream);
  } else {
    launch_nchw_to_nhwc<__half>(a, stream);
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
