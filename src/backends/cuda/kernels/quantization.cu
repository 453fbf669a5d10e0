// The FP8 kernels (see quantization_kernels.h).
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/quantization_kernels.h"
#include "backends/cuda/kernels/quantization_math.cuh"

namespace kiln::cuda {
namespace {

// Each thread quantizes V consecutive values (V divides the count) onto the codes' grid.
template <typename T, int V>
__global__ void quantize_kernel(const T* x, CodesOut codes, std::int64_t packs) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  float v[V];
  load<T, V>(x + i * V, v);
  store_with_codes<T, V>(nullptr, v, codes, i * V);  // x is already of the storage type: exact
}

// V consecutive f32 values, 16 bytes at a time where V allows (p is then 16-byte aligned).
template <int V>
__device__ inline void load_f32(const float* p, float (&out)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 f = reinterpret_cast<const float4*>(p)[q];
      out[4 * q] = f.x;
      out[4 * q + 1] = f.y;
      out[4 * q + 2] = f.z;
      out[4 * q + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = p[k];
  }
}

// Each thread takes V consecutive channels of one pixel (V divides the channel count).
template <typename T, int V>
__global__ void scale_bias_act_kernel(const float* acc, const float* scale, const float* bias,
                                      const T* residual, T* y, std::int64_t packs, int channels, Act act,
                                      CodesOut codes) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t offset = i * V;
  const int c = static_cast<int>(offset % channels);
  float v[V], s[V], b[V], r[V];
  load_f32<V>(acc + offset, v);
  load_f32<V>(scale + c, s);
  load_f32<V>(bias + c, b);
  if (residual != nullptr) load<T, V>(residual + offset, r);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float sum = v[k] * s[k] + b[k];
    if (residual != nullptr) sum += r[k];  // not + 0 without one: that would turn -0 into +0
    v[k] = activate(sum, act);
  }
  store_with_codes<T, V>(y, v, codes, offset);
}

}  // namespace

cudaError_t quantize_codes(const void* x, Elem e, const CodesOut& codes, std::int64_t count,
                           cudaStream_t stream) {
  return dispatch(e, count, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = count / V;
    launch_early(quantize_kernel<T, V>, blocks_for(packs), kBlock, 0, stream, static_cast<const T*>(x), codes,
                 packs);
    return cudaGetLastError();
  });
}

cudaError_t scale_bias_act(const float* acc, const float* scale, const float* bias, const void* residual,
                           void* y, Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream,
                           const CodesOut& codes) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    launch_early(scale_bias_act_kernel<T, V>, blocks_for(packs), kBlock, 0, stream, acc, scale, bias,
                 static_cast<const T*>(residual), static_cast<T*>(y), packs, channels, act, codes);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
