// The split attention kernels (see split_attention_kernels.h).
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/quantization_math.cuh"
#include "backends/cuda/kernels/split_attention_kernels.h"

namespace kiln::cuda {
namespace {

template <typename T, int V>
__global__ void radix_sum_kernel(const T* x, T* y, std::int64_t packs, int radix, int c) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t row = i * V / c;
  const int ch = static_cast<int>(i * V % c);
  float acc[V];
  load<T, V>(x + row * radix * c + ch, acc);
  for (int r = 1; r < radix; ++r) {
    float v[V];
    load<T, V>(x + row * radix * c + r * c + ch, v);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] += v[k];
  }
  store<T, V>(y + i * V, acc);
}

// The attention weight of radix split r for channel ch of one image, from fc2's logits of that image.
template <typename T>
__device__ inline float radix_weight(const T* logits, int r, int ch, int radix, int cardinality, int c) {
  if (radix == 1) return 1.0f / (1.0f + __expf(-to_float(logits[ch])));
  const int per_group = c / cardinality, group = ch / per_group, p = ch % per_group;
  float peak = -INFINITY;
  for (int k = 0; k < radix; ++k) peak = fmaxf(peak, to_float(logits[(group * radix + k) * per_group + p]));
  float sum = 0.0f, mine = 0.0f;
  for (int k = 0; k < radix; ++k) {
    const float e = __expf(to_float(logits[(group * radix + k) * per_group + p]) - peak);
    sum += e;
    if (k == r) mine = e;
  }
  return mine / sum;
}

template <typename T>
__global__ void radix_softmax_kernel(const T* logits, T* weights, int n, int radix, int cardinality, int c) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * radix * c) return;
  const int image = i / (radix * c), r = (i / c) % radix, ch = i % c;
  weights[i] = from_float<T>(
      radix_weight(logits + static_cast<std::int64_t>(image) * radix * c, r, ch, radix, cardinality, c));
}

// One block works inside one image (blockIdx.y): it first puts that image's attention weights, [radix][c]
// in f32, into shared memory (the softmax of fc2's logits computed once per block, not per element),
// then each thread folds the radix splits of one 16-byte pack of channels of one pixel.
template <typename T, int V>
__global__ void radix_weighted_sum_kernel(const T* x, const T* w, T* y, int hw, int radix, int cardinality,
                                          int c, bool from_logits, CodesOut codes) {
  start_after_previous_kernel();    // launched early (kernel_launch.cuh)
  extern __shared__ float table[];  // [radix][c]
  const int image = blockIdx.y;
  const T* weights = w + static_cast<std::int64_t>(image) * radix * c;
  for (int i = threadIdx.x; i < radix * c; i += blockDim.x) {
    table[i] =
        from_logits ? radix_weight(weights, i / c, i % c, radix, cardinality, c) : to_float(weights[i]);
  }
  __syncthreads();
  const int packs = c / V;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::int64_t>(hw) * packs) return;
  const int ch = static_cast<int>(i % packs) * V;
  const std::int64_t row = static_cast<std::int64_t>(image) * hw + i / packs;
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  for (int r = 0; r < radix; ++r) {
    float v[V];
    load<T, V>(x + row * radix * c + r * c + ch, v);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] += v[k] * table[r * c + ch + k];
  }
  store_with_codes<T, V>(y, acc, codes, row * c + ch);
}

}  // namespace

cudaError_t radix_sum(const void* x, void* y, Elem e, std::int64_t rows, int radix, int c,
                      cudaStream_t stream) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * c / V;
    launch_early(radix_sum_kernel<T, V>, blocks_for(packs), kBlock, 0, stream, static_cast<const T*>(x),
                 static_cast<T*>(y), packs, radix, c);
    return cudaGetLastError();
  });
}

cudaError_t radix_softmax(const void* logits, void* weights, Elem e, int n, int radix, int cardinality, int c,
                          cudaStream_t stream) {
  const int total = n * radix * c;
  if (e == Elem::kF32) {
    launch_early(radix_softmax_kernel<float>, blocks_for(total), kBlock, 0, stream,
                 static_cast<const float*>(logits), static_cast<float*>(weights), n, radix, cardinality, c);
  } else {
    launch_early(radix_softmax_kernel<__half>, blocks_for(total), kBlock, 0, stream,
                 static_cast<const __half*>(logits), static_cast<__half*>(weights), n, radix, cardinality, c);
  }
  return cudaGetLastError();
}

cudaError_t radix_weighted_sum(const void* x, const void* w, void* y, Elem e, int n, int hw, int radix,
                               int cardinality, int c, bool from_logits, cudaStream_t stream,
                               const CodesOut& codes) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t per_image = static_cast<std::int64_t>(hw) * (c / V);
    const dim3 grid(blocks_for(per_image), static_cast<unsigned>(n));
    const std::size_t shared = static_cast<std::size_t>(radix) * c * sizeof(float);
    launch_early(radix_weighted_sum_kernel<T, V>, grid, kBlock, shared, stream, static_cast<const T*>(x),
                 static_cast<const T*>(w), static_cast<T*>(y), hw, radix, cardinality, c, from_logits, codes);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
