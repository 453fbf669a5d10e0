// The depthwise convolution kernel (see depthwise_kernels.h). Each thread computes one pack of channels
// (16 bytes where the channel count allows) of one output pixel: for every tap inside the image it reads
// that pack of input channels and the tap's weights for them, both consecutive in memory.
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/depthwise_kernels.h"
#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

template <typename T, int V>
__global__ void depthwise_kernel(const T* x, const T* weight, const T* bias, const T* residual, T* y,
                                 DepthwiseShape s, Act act) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const int packs = s.c / V;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * packs;
  if (i >= total) return;
  // i runs over (image, oy, ox, pack) with the pack fastest: y's NHWC order, so y's offset is i * V.
  const int ch = static_cast<int>(i % packs) * V;
  const int ox = static_cast<int>((i / packs) % s.out_w);
  const int oy = static_cast<int>((i / packs / s.out_w) % s.out_h);
  const std::int64_t image = i / packs / s.out_w / s.out_h;
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  for (int ky = 0; ky < s.kernel_h; ++ky) {
    const int iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
    if (iy < 0 || iy >= s.in_h) continue;
    for (int kx = 0; kx < s.kernel_w; ++kx) {
      const int ix = ox * s.stride_w - s.pad_w + kx * s.dilation_w;
      if (ix < 0 || ix >= s.in_w) continue;
      float v[V], w[V];
      load<T, V>(x + ((image * s.in_h + iy) * s.in_w + ix) * s.c + ch, v);
      load<T, V>(weight + static_cast<std::int64_t>(ky * s.kernel_w + kx) * s.c + ch, w);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += v[k] * w[k];
    }
  }
  float b[V];
  load<T, V>(bias + ch, b);
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] += b[k];
  const std::int64_t offset = i * V;
  if (residual != nullptr) {
    float r[V];
    load<T, V>(residual + offset, r);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] += r[k];
  }
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = activate(acc[k], act);
  store<T, V>(y + offset, acc);
}

}  // namespace

cudaError_t depthwise_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                           Elem e, const DepthwiseShape& s, Act act, cudaStream_t stream) {
  return dispatch(e, s.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * (s.c / V);
    return launch_early(depthwise_kernel<T, V>, blocks_for(total), kBlock, 0, stream,
                        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
                        static_cast<const T*>(residual), static_cast<T*>(y), s, act);
  });
}

}  // namespace kiln::cuda
