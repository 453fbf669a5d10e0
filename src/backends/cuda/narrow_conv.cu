// The narrow-input convolution kernel (see narrow_conv_kernels.h). A block first copies every weight to
// shared memory as f32. Each thread then computes one pack of output channels (16 bytes where the
// channel count allows) for kPixels neighbouring output pixels of one row: for every tap and input
// channel it reads the pack's weights once and the kPixels input values, so a weight read from shared
// memory serves kPixels multiply-adds per channel.
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/narrow_conv_kernels.h"

namespace kiln::cuda {
namespace {

constexpr int kPixels = 4;

template <typename T, int V>
__device__ void narrow_conv_epilogue(float (&acc)[kPixels][V], const T* bias, const T* residual, T* y,
                                     const NarrowConvShape& s, std::int64_t row_offset, int ox0, int channel,
                                     Act act) {
  float b[V];
  load<T, V>(bias + channel, b);
#pragma unroll
  for (int p = 0; p < kPixels; ++p) {
    if (ox0 + p >= s.out_w) break;
    const std::int64_t offset = row_offset + static_cast<std::int64_t>(ox0 + p) * s.k + channel;
    float r[V] = {};
    if (residual != nullptr) load<T, V>(residual + offset, r);
#pragma unroll
    for (int j = 0; j < V; ++j) acc[p][j] = activate(acc[p][j] + b[j] + r[j], act);
    store<T, V>(y + offset, acc[p]);
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlock)
    narrow_conv_kernel(const T* x, const T* weight, const T* bias, const T* residual, T* y, NarrowConvShape s,
                       Act act) {
  extern __shared__ float weights[];
  const int count = s.kernel_h * s.kernel_w * s.c * s.k;
  for (int j = threadIdx.x; j < count; j += blockDim.x) weights[j] = to_float(weight[j]);
  __syncthreads();
  const int packs = s.k / V, row_blocks = (s.out_w + kPixels - 1) / kPixels;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::int64_t>(s.n) * s.out_h * row_blocks * packs) return;
  // i runs over (image, oy, block of kPixels output pixels, pack) with the pack fastest.
  const int channel = static_cast<int>(i % packs) * V;
  const int ox0 = static_cast<int>((i / packs) % row_blocks) * kPixels;
  const std::int64_t out_row = i / packs / row_blocks;  // image * out_h + oy
  const int oy = static_cast<int>(out_row % s.out_h);
  const std::int64_t image = out_row / s.out_h;
  float acc[kPixels][V] = {};
  for (int ky = 0; ky < s.kernel_h; ++ky) {
    const int iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
    if (iy < 0 || iy >= s.in_h) continue;
    const T* row = x + (image * s.in_h + iy) * s.in_w * s.c;
    for (int kx = 0; kx < s.kernel_w; ++kx) {
      int column[kPixels];  // the input column of each pixel, -1 outside the image
#pragma unroll
      for (int p = 0; p < kPixels; ++p) {
        const int ix = (ox0 + p) * s.stride_w - s.pad_w + kx * s.dilation_w;
        column[p] = ix >= 0 && ix < s.in_w ? ix : -1;
      }
      const float* tap = weights + (ky * s.kernel_w + kx) * s.c * s.k + channel;
      for (int ci = 0; ci < s.c; ++ci) {
        float w[V];
        if constexpr (V % 4 == 0) {  // k and the pack's first channel are multiples of 4: aligned
#pragma unroll
          for (int j = 0; j < V; j += 4) {
            const float4 q = *reinterpret_cast<const float4*>(tap + ci * s.k + j);
            w[j] = q.x, w[j + 1] = q.y, w[j + 2] = q.z, w[j + 3] = q.w;
          }
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) w[j] = tap[ci * s.k + j];
        }
#pragma unroll
        for (int p = 0; p < kPixels; ++p) {
          const float v = column[p] >= 0 ? to_float(row[column[p] * s.c + ci]) : 0.0f;
#pragma unroll
          for (int j = 0; j < V; ++j) acc[p][j] += v * w[j];
        }
      }
    }
  }
  narrow_conv_epilogue<T, V>(acc, bias, residual, y, s, out_row * s.out_w * s.k, ox0, channel, act);
}

}  // namespace

cudaError_t narrow_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                        Elem e, const NarrowConvShape& s, Act act, cudaStream_t stream) {
  return dispatch(e, s.k, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t threads =
        static_cast<std::int64_t>(s.n) * s.out_h * ((s.out_w + kPixels - 1) / kPixels) * (s.k / V);
    const std::size_t shared = sizeof(float) * s.kernel_h * s.kernel_w * s.c * s.k;
    narrow_conv_kernel<T, V><<<blocks_for(threads), kBlock, shared, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
        static_cast<const T*>(residual), static_cast<T*>(y), s, act);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
