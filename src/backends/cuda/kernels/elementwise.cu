// The elementwise kernels (see elementwise_kernels.h).
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/elementwise_kernels.h"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/quantization_math.cuh"

namespace kiln::cuda {
namespace {

template <typename T, int V>
__global__ void add_bias_act_kernel(const T* a, const T* b, const T* bias, T* y, std::int64_t packs,
                                    int channels, Act act, CodesOut codes) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t offset = i * V;
  float v[V];
  load<T, V>(a + offset, v);
  if (b != nullptr) {
    float w[V];
    load<T, V>(b + offset, w);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] += w[k];
  }
  if (bias != nullptr) {
    float w[V];
    load<T, V>(bias + offset % channels, w);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] += w[k];
  }
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = activate(v[k], act);
  store_with_codes<T, V>(y, v, codes, offset);
}

// add_act_views: each pack's pixel and channel, then its place in each view.
template <typename T, int V>
__global__ void add_act_views_kernel(const T* a, const T* b, T* y, std::int64_t packs, int channels,
                                     ViewPitches p, Act act) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t offset = i * V, pixel = offset / channels, channel = offset % channels;
  float v[V], w[V];
  load<T, V>(a + pixel * p.a + channel, v);
  load<T, V>(b + pixel * p.b + channel, w);
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = activate(v[k] + w[k], act);
  store<T, V>(y + pixel * p.y + channel, v);
}

template <typename T, int V>
__global__ void scale_shift_kernel(const T* x, const float* scale, const float* shift, T* y,
                                   std::int64_t packs, int channels) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t offset = i * V;
  const int ch = static_cast<int>(offset % channels);
  float v[V];
  load<T, V>(x + offset, v);
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = v[k] * scale[ch + k] + shift[ch + k];
  store<T, V>(y + offset, v);
}

// Each thread scales V channels of one pixel by its image's gate; V divides the channel count, so a pack
// never crosses into the next pixel and its gate values are V consecutive ones of the gate row.
template <typename T, int V>
__global__ void channel_scale_kernel(const T* x, const T* gate, T* y, std::int64_t packs, int channels,
                                     std::int64_t image_elems) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const std::int64_t offset = i * V;
  const std::int64_t image = offset / image_elems;
  const int ch = static_cast<int>(offset % channels);
  float v[V], g[V];
  load<T, V>(x + offset, v);
  load<T, V>(gate + image * channels + ch, g);
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] *= g[k];
  store<T, V>(y + offset, v);
}

}  // namespace

cudaError_t add_bias_act(const void* a, const void* b, const void* bias, void* y, Elem e, std::int64_t rows,
                         int channels, Act act, cudaStream_t stream, const CodesOut& codes) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    return launch_early(add_bias_act_kernel<T, V>, blocks_for(packs), kBlock, 0, stream,
                        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(bias),
                        static_cast<T*>(y), packs, channels, act, codes);
  });
}

cudaError_t add_act_views(const void* a, const void* b, void* y, const ViewPitches& pitches, Elem e,
                          std::int64_t rows, int channels, Act act, cudaStream_t stream) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    return launch_early(add_act_views_kernel<T, V>, blocks_for(packs), kBlock, 0, stream,
                        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), packs,
                        channels, pitches, act);
  });
}

cudaError_t scale_shift(const void* x, const float* scale, const float* shift, void* y, Elem e,
                        std::int64_t rows, int channels, cudaStream_t stream) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    launch_early(scale_shift_kernel<T, V>, blocks_for(packs), kBlock, 0, stream, static_cast<const T*>(x),
                 scale, shift, static_cast<T*>(y), packs, channels);
    return cudaGetLastError();
  });
}

cudaError_t channel_scale(const void* x, const void* gate, void* y, Elem e, int images, std::int64_t pixels,
                          int channels, cudaStream_t stream) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t image_elems = pixels * channels;
    const std::int64_t packs = images * image_elems / V;
    launch_early(channel_scale_kernel<T, V>, blocks_for(packs), kBlock, 0, stream, static_cast<const T*>(x),
                 static_cast<const T*>(gate), static_cast<T*>(y), packs, channels, image_elems);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
