// kiln's kernel for RGB stems (see narrow_conv_kernels.h).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/narrow_conv_kernels.h"

namespace kiln::cuda {
namespace {

// One thread per output pixel computes all K outputs, its 27 inputs read from global memory
// (neighbouring threads' windows overlap, so most reads hit L1). The weights are a launch argument: each
// multiply-add takes its weight from the constant cache, broadcast to the warp, at an offset known when
// compiling; with the weights in shared memory instead, each multiply-add waited on a shared-memory load.
constexpr int kStemChannels = 3, kStemTaps = 3;

template <int K>
struct StemArguments {
  float taps[kStemTaps * kStemTaps * kStemChannels * K];  // [ky][kx][c][k]
  float bias[K];
};

template <typename T, int K>
__global__ void __launch_bounds__(kBlock) stem_conv_kernel(const T* x, T* y, NarrowConvShape s, Act act,
                                                           const __grid_constant__ StemArguments<K> a) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (p >= static_cast<std::int64_t>(s.n) * s.out_h * s.out_w) return;
  const int ox = static_cast<int>(p % s.out_w), oy = static_cast<int>(p / s.out_w % s.out_h);
  const std::int64_t image = p / (static_cast<std::int64_t>(s.out_w) * s.out_h);
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = a.bias[k];
#pragma unroll
  for (int ky = 0; ky < kStemTaps; ++ky) {
    const int iy = oy * s.stride_h - s.pad_h + ky;
    if (iy < 0 || iy >= s.in_h) continue;
#pragma unroll
    for (int kx = 0; kx < kStemTaps; ++kx) {
      const int ix = ox * s.stride_w - s.pad_w + kx;
      if (ix < 0 || ix >= s.in_w) continue;
      const T* pixel = x + ((image * s.in_h + iy) * s.in_w + ix) * kStemChannels;
      float v[kStemChannels];
#pragma unroll
      for (int c = 0; c < kStemChannels; ++c) v[c] = to_float(__ldg(pixel + c));
#pragma unroll
      for (int c = 0; c < kStemChannels; ++c) {
#pragma unroll
        for (int k = 0; k < K; ++k)
          acc[k] = fmaf(v[c], a.taps[((ky * kStemTaps + kx) * kStemChannels + c) * K + k], acc[k]);
      }
    }
  }
  constexpr int V = kPack<T>;
  T* out = y + p * K;
#pragma unroll
  for (int k = 0; k < K; k += V) {
    float pack[V];
#pragma unroll
    for (int j = 0; j < V; ++j) pack[j] = activate(acc[k + j], act);
    store<T, V>(out + k, pack);
  }
}

template <typename T, int K>
cudaError_t launch_stem(const void* x, const float* taps, const float* bias, void* y,
                        const NarrowConvShape& s, Act act, cudaStream_t stream) {
  StemArguments<K> a;
  std::copy(taps, taps + std::size(a.taps), a.taps);
  std::copy(bias, bias + K, a.bias);
  const std::int64_t pixels = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w;
  if (pixels / kBlock >= 0x7fffffff) return cudaErrorInvalidConfiguration;
  return launch_early(stem_conv_kernel<T, K>, blocks_for(pixels), kBlock, 0, stream, static_cast<const T*>(x),
                      static_cast<T*>(y), s, act, a);
}

}  // namespace

bool narrow_conv_is_stem(const NarrowConvShape& s, bool residual) {
  return s.c == kStemChannels && s.kernel_h == kStemTaps && s.kernel_w == kStemTaps && s.dilation_h == 1 &&
         s.dilation_w == 1 && !residual && (s.k == 16 || s.k == 32);
}

cudaError_t stem_conv(const void* x, const float* taps, const float* bias, void* y, Elem e,
                      const NarrowConvShape& s, Act act, cudaStream_t stream) {
  if (!narrow_conv_is_stem(s, false)) return cudaErrorInvalidConfiguration;
  if (e == Elem::kF32) {
    return s.k == 16 ? launch_stem<float, 16>(x, taps, bias, y, s, act, stream)
                     : launch_stem<float, 32>(x, taps, bias, y, s, act, stream);
  }
  return s.k == 16 ? launch_stem<__half, 16>(x, taps, bias, y, s, act, stream)
                   : launch_stem<__half, 32>(x, taps, bias, y, s, act, stream);
}

}  // namespace kiln::cuda
