// kiln's own CUDA kernels (see kernels.h). Memory-bound: each thread moves 16 bytes of channels at a
// time when the channel count allows it (8 fp16 or 4 f32 values), reads each input once and computes
// in f32. Every kernel is instantiated for f32 and fp16 only, to keep compile times short.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernels.h"

namespace kiln::cuda {
namespace {

constexpr int kBlock = 256;

// Values per 16-byte access.
template <typename T>
constexpr int kPack = 16 / static_cast<int>(sizeof(T));

template <typename T, int V>
__device__ inline void load(const T* p, float (&out)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(p[i]);
  }
}

template <typename T, int V>
__device__ inline void store(T* p, const float (&in)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) e[i] = from_float<T>(in[i]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = from_float<T>(in[i]);
  }
}

unsigned blocks_for(std::int64_t threads) { return static_cast<unsigned>((threads + kBlock - 1) / kBlock); }

// The element type and pack width a launch is instantiated for.
template <typename T, int V>
struct Kind {
  using type = T;
  static constexpr int pack = V;
};

// Calls launch(Kind<T, V>{}) with the element type and the widest pack `channels` allows.
template <typename Launch>
cudaError_t dispatch(Elem e, std::int64_t channels, Launch launch) {
  if (e == Elem::kF32) {
    if (channels % kPack<float> == 0) return launch(Kind<float, kPack<float>>{});
    return launch(Kind<float, 1>{});
  }
  if (channels % kPack<__half> == 0) return launch(Kind<__half, kPack<__half>>{});
  return launch(Kind<__half, 1>{});
}

// ---- conversions and fills

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

// ---- elementwise

template <typename T, int V>
__global__ void add_bias_act_kernel(const T* a, const T* b, const T* bias, T* y, std::int64_t packs, int channels,
                                    Act act) {
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
  store<T, V>(y + offset, v);
}

template <typename T, int V>
__global__ void scale_shift_kernel(const T* x, const float* scale, const float* shift, T* y, std::int64_t packs,
                                   int channels) {
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

// ---- pooling (PyTorch's window rules, as the reference kernels state them)

template <typename T, int V, bool kMax>
__global__ void pool_kernel(const T* x, T* y, PoolShape s) {
  const int packs = s.c / V;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * packs;
  if (i >= total) return;
  const int cp = static_cast<int>(i % packs);
  const int ox = static_cast<int>((i / packs) % s.out_w);
  const int oy = static_cast<int>((i / packs / s.out_w) % s.out_h);
  const int image = static_cast<int>(i / packs / s.out_w / s.out_h);
  const int start_y = oy * s.stride_h - s.pad_top, start_x = ox * s.stride_w - s.pad_left;
  const int stop_y = min(start_y + s.kernel_h, s.in_h + s.pad_bottom);
  const int stop_x = min(start_x + s.kernel_w, s.in_w + s.pad_right);
  const int y0 = max(start_y, 0), y1 = min(stop_y, s.in_h), x0 = max(start_x, 0), x1 = min(stop_x, s.in_w);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = kMax ? -INFINITY : 0.0f;
  for (int iy = y0; iy < y1; ++iy) {
    for (int ix = x0; ix < x1; ++ix) {
      float v[V];
      load<T, V>(x + ((static_cast<std::int64_t>(image) * s.in_h + iy) * s.in_w + ix) * s.c + cp * V, v);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if constexpr (kMax) {
          if (v[k] > acc[k] || isnan(v[k])) acc[k] = isnan(acc[k]) ? acc[k] : v[k];
        } else {
          acc[k] += v[k];
        }
      }
    }
  }
  if constexpr (!kMax) {
    const int divisor =
        s.count_include_pad ? (stop_y - start_y) * (stop_x - start_x) : (y1 - y0) * (x1 - x0);
    const float inverse = 1.0f / static_cast<float>(divisor);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inverse;
  }
  store<T, V>(y + i * V, acc);
}

// ---- split attention

constexpr int kPoolThreads = 256;      // threads per block of the global pool
constexpr int kPoolRowsPerThread = 4;  // pixels each thread sums at least, to keep atomics few

// Partial sums of the radix sum over a slice of pixels (blockIdx.z), added into partial[n, c] (f32,
// atomics). A block is blockDim.x lanes along the channel packs by blockDim.y along the pixels, shaped
// to the channel count so that narrow layers keep every thread busy. The last block to finish a
// (channel block, image) pair, told by a counter, writes the mean and leaves the partial sums and the
// counter at zero for the next run: one launch in all.
template <typename T, int V>
__global__ void radix_pool_kernel(const T* x, T* y, float* partial, unsigned* counters, int hw, int radix, int c,
                                  int rows_per_split, float inverse_hw) {
  __shared__ float sums[kPoolThreads][V];
  __shared__ bool last;
  const int lanes = static_cast<int>(blockDim.x), rows = static_cast<int>(blockDim.y);
  const int slot = static_cast<int>(threadIdx.y) * lanes + static_cast<int>(threadIdx.x);
  const int cp = static_cast<int>(blockIdx.x) * lanes + static_cast<int>(threadIdx.x);
  const int image = blockIdx.y;
  const bool active = cp * V < c;
  const int begin = blockIdx.z * rows_per_split, end = min(begin + rows_per_split, hw);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  if (active) {
    for (int p = begin + static_cast<int>(threadIdx.y); p < end; p += rows) {
      const T* row = x + (static_cast<std::int64_t>(image) * hw + p) * radix * c + cp * V;
      for (int r = 0; r < radix; ++r) {
        float v[V];
        load<T, V>(row + r * c, v);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] += v[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) sums[slot][k] = acc[k];
  __syncthreads();
  float* mine = partial + static_cast<std::int64_t>(image) * c + cp * V;
  if (threadIdx.y == 0 && active) {
    for (int row = 1; row < rows; ++row) {
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += sums[row * lanes + threadIdx.x][k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) atomicAdd(mine + k, acc[k]);
    __threadfence();
  }
  __syncthreads();
  unsigned* counter = counters + image * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(counter, 1u) == gridDim.z - 1;
  __syncthreads();
  if (!last) return;
  if (threadIdx.y == 0 && active) {
    float mean[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mean[k] = __ldcg(mine + k) * inverse_hw;
      mine[k] = 0.0f;
    }
    store<T, V>(y + static_cast<std::int64_t>(image) * c + cp * V, mean);
  }
  if (threadIdx.x == 0 && threadIdx.y == 0) *counter = 0;
}

template <typename T, int V>
__global__ void radix_sum_kernel(const T* x, T* y, std::int64_t packs, int radix, int c) {
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
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * radix * c) return;
  const int image = i / (radix * c), r = (i / c) % radix, ch = i % c;
  weights[i] = from_float<T>(radix_weight(logits + static_cast<std::int64_t>(image) * radix * c, r, ch, radix,
                                          cardinality, c));
}

// One block works inside one image (blockIdx.y): it first puts that image's attention weights, [radix][c]
// in f32, into shared memory (the softmax of fc2's logits computed once per block, not per element),
// then each thread folds the radix splits of one 16-byte pack of channels of one pixel.
template <typename T, int V>
__global__ void radix_weighted_sum_kernel(const T* x, const T* w, T* y, int hw, int radix, int cardinality, int c,
                                          bool from_logits) {
  extern __shared__ float table[];  // [radix][c]
  const int image = blockIdx.y;
  const T* weights = w + static_cast<std::int64_t>(image) * radix * c;
  for (int i = threadIdx.x; i < radix * c; i += blockDim.x) {
    table[i] = from_logits ? radix_weight(weights, i / c, i % c, radix, cardinality, c) : to_float(weights[i]);
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
  store<T, V>(y + row * c + ch, acc);
}

// ---- FP8

template <typename T>
__global__ void quantize_e4m3_kernel(const T* x, std::uint8_t* y, std::int64_t count, float scale) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  // A true division, as the reference quantizer does: x * (1 / scale) can differ in the last bit.
  y[i] = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(__fdiv_rn(to_float(x[i]), scale), __NV_SATFINITE, __NV_E4M3));
}

template <typename T>
__global__ void scale_bias_act_kernel(const float* acc, const float* scale, const float* bias, const T* residual,
                                      T* y, std::int64_t count, int channels, Act act) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const int c = static_cast<int>(i % channels);
  float v = acc[i] * scale[c] + bias[c];
  if (residual != nullptr) v += to_float(residual[i]);
  y[i] = from_float<T>(activate(v, act));
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

cudaError_t add_bias_act(const void* a, const void* b, const void* bias, void* y, Elem e, std::int64_t rows,
                         int channels, Act act, cudaStream_t stream) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    add_bias_act_kernel<T, V><<<blocks_for(packs), kBlock, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(bias), static_cast<T*>(y), packs,
        channels, act);
    return cudaGetLastError();
  });
}

cudaError_t scale_shift(const void* x, const float* scale, const float* shift, void* y, Elem e, std::int64_t rows,
                        int channels, cudaStream_t stream) {
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * channels / V;
    scale_shift_kernel<T, V><<<blocks_for(packs), kBlock, 0, stream>>>(static_cast<const T*>(x), scale, shift,
                                                                       static_cast<T*>(y), packs, channels);
    return cudaGetLastError();
  });
}

cudaError_t max_pool(const void* x, void* y, Elem e, const PoolShape& s, cudaStream_t stream) {
  return dispatch(e, s.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * (s.c / V);
    pool_kernel<T, V, true><<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), s);
    return cudaGetLastError();
  });
}

cudaError_t avg_pool(const void* x, void* y, Elem e, const PoolShape& s, cudaStream_t stream) {
  return dispatch(e, s.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * (s.c / V);
    pool_kernel<T, V, false><<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                        s);
    return cudaGetLastError();
  });
}

cudaError_t radix_global_pool(const void* x, void* y, float* partial, Elem e, int n, int hw, int radix, int c,
                              cudaStream_t stream) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    // Lanes along the channel packs (a power of two up to 32), the rest of the block along the pixels.
    const int packs = c / V;
    int lanes = 1;
    while (lanes < packs && lanes < 32) lanes *= 2;
    const int rows = kPoolThreads / lanes;
    const int channel_blocks = (packs + lanes - 1) / lanes;
    // Split the pixels so that the grid covers the chip about twice (132 multiprocessors on the H200),
    // but give every thread a few pixels: each split adds one atomic per channel, and atomics on the
    // same few cache lines serialize.
    const int wanted = max(1, 264 / (channel_blocks * n));
    const int splits = max(1, min(wanted, (hw + rows * kPoolRowsPerThread - 1) / (rows * kPoolRowsPerThread)));
    const int rows_per_split = (hw + splits - 1) / splits;
    auto* counters = reinterpret_cast<unsigned*>(partial + static_cast<std::int64_t>(n) * c);
    radix_pool_kernel<T, V><<<dim3(channel_blocks, n, splits), dim3(lanes, rows), 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), partial, counters, hw, radix, c, rows_per_split,
        1.0f / static_cast<float>(hw));
    return cudaGetLastError();
  });
}

cudaError_t radix_sum(const void* x, void* y, Elem e, std::int64_t rows, int radix, int c, cudaStream_t stream) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t packs = rows * c / V;
    radix_sum_kernel<T, V><<<blocks_for(packs), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                     packs, radix, c);
    return cudaGetLastError();
  });
}

cudaError_t radix_softmax(const void* logits, void* weights, Elem e, int n, int radix, int cardinality, int c,
                          cudaStream_t stream) {
  const int total = n * radix * c;
  if (e == Elem::kF32) {
    radix_softmax_kernel<<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const float*>(logits),
                                                                   static_cast<float*>(weights), n, radix,
                                                                   cardinality, c);
  } else {
    radix_softmax_kernel<<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const __half*>(logits),
                                                                   static_cast<__half*>(weights), n, radix,
                                                                   cardinality, c);
  }
  return cudaGetLastError();
}

cudaError_t radix_weighted_sum(const void* x, const void* w, void* y, Elem e, int n, int hw, int radix,
                               int cardinality, int c, bool from_logits, cudaStream_t stream) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t per_image = static_cast<std::int64_t>(hw) * (c / V);
    const dim3 grid(blocks_for(per_image), static_cast<unsigned>(n));
    const std::size_t shared = static_cast<std::size_t>(radix) * c * sizeof(float);
    radix_weighted_sum_kernel<T, V><<<grid, kBlock, shared, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), hw, radix, cardinality, c, from_logits);
    return cudaGetLastError();
  });
}

cudaError_t quantize_e4m3(const void* x, Elem e, std::uint8_t* y, std::int64_t count, float scale,
                          cudaStream_t stream) {
  if (e == Elem::kF32) {
    quantize_e4m3_kernel<float><<<blocks_for(count), kBlock, 0, stream>>>(static_cast<const float*>(x), y, count, scale);
  } else {
    quantize_e4m3_kernel<__half><<<blocks_for(count), kBlock, 0, stream>>>(static_cast<const __half*>(x), y, count,
                                                                            scale);
  }
  return cudaGetLastError();
}

cudaError_t scale_bias_act(const float* acc, const float* scale, const float* bias, const void* residual, void* y,
                           Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream) {
  const std::int64_t count = rows * channels;
  if (e == Elem::kF32) {
    scale_bias_act_kernel<float><<<blocks_for(count), kBlock, 0, stream>>>(
        acc, scale, bias, static_cast<const float*>(residual), static_cast<float*>(y), count, channels, act);
  } else {
    scale_bias_act_kernel<__half><<<blocks_for(count), kBlock, 0, stream>>>(
        acc, scale, bias, static_cast<const __half*>(residual), static_cast<__half*>(y), count, channels, act);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
