// The pooling kernels (see pooling_kernels.h): PyTorch's window rules, as the reference kernels state
// them, the global pool of the radix sum, and that pool with a squeeze-excite's fc1
// (squeeze_excite_kernels.h).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/pooling_kernels.h"
#include "backends/cuda/kernels/quantization_math.cuh"
#include "backends/cuda/kernels/squeeze_excite_kernels.h"
#include "backends/cuda/kernels/warp_dots.cuh"

namespace kiln::cuda {
namespace {

template <typename T, int V, bool kMax>
__global__ void pool_kernel(const T* x, T* y, PoolShape s, CodesOut codes) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
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
    const int divisor = s.count_include_pad ? (stop_y - start_y) * (stop_x - start_x) : (y1 - y0) * (x1 - x0);
    const float inverse = 1.0f / static_cast<float>(divisor);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inverse;
  }
  store_with_codes<T, V>(y, acc, codes, i * V);
}

// Keeps the larger of acc and v, NaN propagating as in pool_kernel.
template <int V>
__device__ inline void keep_max(float (&acc)[V], const float (&v)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) {
    if (v[k] > acc[k] || isnan(v[k])) acc[k] = isnan(acc[k]) ? acc[k] : v[k];
  }
}

// max_pool_cascade: one block per image and pack of V channels. The image's pack goes to shared memory;
// then, per output j, each pixel's maximum along its row within radius (j + 1) * radius; then the maximum
// of those along its column (a square window's maximum is the maximum of its rows' maxima, both clipped
// to the image as the pools clip).
template <typename T, int V>
__global__ void max_pool_cascade_kernel(PoolCascade p) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  extern __shared__ __align__(16) unsigned char cascade_shared[];
  T* tile = reinterpret_cast<T*>(cascade_shared);  // [1 + outputs][h * w][V]: x, then the row maxima
  const int hw = p.h * p.w, packs = p.c / V;
  const int cp = static_cast<int>(blockIdx.x) % packs;
  const std::int64_t first_pixel = static_cast<std::int64_t>(blockIdx.x / packs) * hw;
  const int reach = p.radius * p.outputs;
  for (int q = static_cast<int>(threadIdx.x); q < hw; q += blockDim.x) {
    float v[V];
    load<T, V>(static_cast<const T*>(p.x) + (first_pixel + q) * p.x_pitch + cp * V, v);
    store<T, V>(tile + q * V, v);
  }
  __syncthreads();
  for (int q = static_cast<int>(threadIdx.x); q < hw; q += blockDim.x) {
    const int row = q / p.w, col = q % p.w;
    float acc[3][V];
#pragma unroll
    for (int j = 0; j < 3; ++j) {
#pragma unroll
      for (int k = 0; k < V; ++k) acc[j][k] = -INFINITY;
    }
    for (int x = max(col - reach, 0); x <= min(col + reach, p.w - 1); ++x) {
      const int distance = abs(x - col);
      float v[V];
      load<T, V>(tile + (row * p.w + x) * V, v);
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        if (distance <= (j + 1) * p.radius) keep_max<V>(acc[j], v);
      }
    }
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      if (j < p.outputs) store<T, V>(tile + ((j + 1) * hw + q) * V, acc[j]);
    }
  }
  __syncthreads();
  for (int q = static_cast<int>(threadIdx.x); q < hw; q += blockDim.x) {
    const int row = q / p.w, col = q % p.w;
    for (int j = 0; j < p.outputs; ++j) {
      const int r = (j + 1) * p.radius;
      float acc[V], v[V];
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = -INFINITY;
      for (int y = max(row - r, 0); y <= min(row + r, p.h - 1); ++y) {
        load<T, V>(tile + ((j + 1) * hw + y * p.w + col) * V, v);
        keep_max<V>(acc, v);
      }
      store<T, V>(static_cast<T*>(p.y[j]) + (first_pixel + q) * p.y_pitch[j] + cp * V, acc);
    }
  }
}

constexpr int kPoolThreads = 256;      // threads per block of the global pool
constexpr int kPoolRowsPerThread = 4;  // pixels each thread sums at least, to keep atomics few

// What a squeeze-excite's pool (squeeze_excite_kernels.h) computes after its means: fc1 on them. Each channel
// block's last block multiplies its slice of the pooled vector into every hidden unit (its columns of W1),
// so W1 is read by as many blocks as there are channel blocks rather than by one; the image's last such
// block adds the slices' sums in order and applies the bias and the activation.
template <typename T>
struct SqueezeTail {
  const T* w1 = nullptr;
  const T* b1 = nullptr;
  T* hidden = nullptr;
  float* partial = nullptr;  // [n][channel blocks][units]
  unsigned* image_counters = nullptr;
  int units = 0;
  Act act = Act::kNone;
};

// Called by every thread of a channel block's last block once `mean` holds its slice of the pooled vector
// (rounded to T, as the pool layer stores it).
template <typename T, int V>
__device__ void squeeze_tail(const float* mean, int c, const SqueezeTail<T>& tail) {
  constexpr int kRows = 4;  // hidden units a warp computes at once
  __shared__ bool image_last;
  __syncthreads();  // the slice's means written
  const int threads = static_cast<int>(blockDim.x * blockDim.y);
  const int t = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x), lane = t % 32, warps = threads / 32;
  const int image = blockIdx.y, blocks = gridDim.x, block = blockIdx.x;
  const int first_channel = block * static_cast<int>(blockDim.x) * V;
  const int len = min(static_cast<int>(blockDim.x) * V, c - first_channel);
  float* sums = tail.partial + (static_cast<std::int64_t>(image) * blocks + block) * tail.units;
  for (int first = t / 32 * kRows; first < tail.units; first += warps * kRows) {
    float dots[kRows];
    warp_dots<T, V, kRows>(tail.w1 + first_channel, tail.units, c, len, first, mean, dots);
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      if (lane == 0 && first + k < tail.units) sums[first + k] = dots[k];
    }
  }
  __threadfence();  // this block's sums, seen by the block that adds them all
  __syncthreads();
  if (t == 0) image_last = atomicAdd(tail.image_counters + image, 1u) == static_cast<unsigned>(blocks) - 1;
  __syncthreads();
  if (!image_last) return;
  const float* image_sums = tail.partial + static_cast<std::int64_t>(image) * blocks * tail.units;
  for (int u = t; u < tail.units; u += threads) {
    float sum = 0.0f;
#pragma unroll 4
    for (int q = 0; q < blocks; ++q)
      sum += __ldcg(image_sums + static_cast<std::int64_t>(q) * tail.units + u);
    tail.hidden[static_cast<std::int64_t>(image) * tail.units + u] =
        from_float<T>(activate(sum + to_float(tail.b1[u]), tail.act));
  }
  if (t == 0) tail.image_counters[image] = 0;
}

// Partial sums of the radix sum over a slice of pixels (blockIdx.z), stored in partial[split, n, c] (f32).
// A block is blockDim.x lanes along the channel packs by blockDim.y along the pixels, shaped to the
// channel count so that narrow layers keep every thread busy. The last block to finish a (channel block,
// image) pair, told by a counter, adds the splits' sums in a fixed order (the result does not depend on
// which block finished when: concurrent runs give the bits a lone run gives), writes the mean and leaves
// the counter at zero for the next run: one launch in all. kSqueeze: the mean goes on to fc1 (squeeze_tail)
// instead of to y.
template <typename T, int V, bool kSqueeze>
__global__ void radix_pool_kernel(const T* x, T* y, float* partial, unsigned* counters, int hw, int radix,
                                  int c, int rows_per_split, float inverse_hw, CodesOut codes,
                                  SqueezeTail<T> tail) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  __shared__ float sums[kPoolThreads][V];
  __shared__ float slice_mean[kSqueeze ? 32 * V : 1];  // a squeeze-excite's slice of the pooled vector
  __shared__ bool last;
  const int lanes = static_cast<int>(blockDim.x), rows = static_cast<int>(blockDim.y);
  const int slot = static_cast<int>(threadIdx.y) * lanes + static_cast<int>(threadIdx.x);
  const int cp = static_cast<int>(blockIdx.x) * lanes + static_cast<int>(threadIdx.x);
  const int image = blockIdx.y, images = gridDim.y, splits = gridDim.z;
  const bool active = cp * V < c;
  const int begin = blockIdx.z * rows_per_split, end = min(begin + rows_per_split, hw);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  if (active) {
    const auto pixel = [&](int p) {
      return x + (static_cast<std::int64_t>(image) * hw + p) * radix * c + cp * V;
    };
    int p = begin + static_cast<int>(threadIdx.y);
    // Four pixels' loads in flight before their sums (a fixed order: the same bits run after run).
    for (; p + 3 * rows < end; p += 4 * rows) {
      for (int r = 0; r < radix; ++r) {
        float v[4][V];
#pragma unroll
        for (int j = 0; j < 4; ++j) load<T, V>(pixel(p + j * rows) + r * c, v[j]);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += v[j][k];
        }
      }
    }
    for (; p < end; p += rows) {
      for (int r = 0; r < radix; ++r) {
        float v[V];
        load<T, V>(pixel(p) + r * c, v);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] += v[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) sums[slot][k] = acc[k];
  __syncthreads();
  const auto at = [&](int split) {
    return partial + (static_cast<std::int64_t>(split) * images + image) * c + cp * V;
  };
  if (threadIdx.y == 0 && active) {
    for (int row = 1; row < rows; ++row) {
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += sums[row * lanes + threadIdx.x][k];
    }
    float* mine = at(static_cast<int>(blockIdx.z));
#pragma unroll
    for (int k = 0; k < V; ++k) mine[k] = acc[k];
    __threadfence();
  }
  __syncthreads();
  unsigned* counter = counters + image * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(counter, 1u) == gridDim.z - 1;
  __syncthreads();
  if (!last) return;
  // Every row of the block adds its share of the splits (row y: y, y + rows, ...), then row 0 the rows'
  // totals in row order: a fixed order, with a row's loads in flight rather than one split at a time.
  float total[V];
#pragma unroll
  for (int k = 0; k < V; ++k) total[k] = 0.0f;
  if (active) {
    for (int split = static_cast<int>(threadIdx.y); split < splits; split += rows) {
      const float* sum = at(split);
#pragma unroll
      for (int k = 0; k < V; ++k) total[k] += __ldcg(sum + k);
    }
  }
  __syncthreads();  // every thread done with `sums` above
#pragma unroll
  for (int k = 0; k < V; ++k) sums[slot][k] = total[k];
  __syncthreads();
  if (threadIdx.y == 0 && active) {
    float mean[V];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = 0.0f;
    for (int row = 0; row < rows; ++row) {
#pragma unroll
      for (int k = 0; k < V; ++k) mean[k] += sums[row * lanes + threadIdx.x][k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] *= inverse_hw;
    if constexpr (kSqueeze) {
#pragma unroll
      for (int k = 0; k < V; ++k) slice_mean[threadIdx.x * V + k] = to_float(from_float<T>(mean[k]));
    } else {
      store_with_codes<T, V>(y, mean, codes, static_cast<std::int64_t>(image) * c + cp * V);
    }
  }
  if (threadIdx.x == 0 && threadIdx.y == 0) *counter = 0;
  if constexpr (kSqueeze) squeeze_tail<T, V>(slice_mean, c, tail);
}

// How radix_pool_kernel covers [n, hw, c] with V channels per thread.
struct RadixPoolGrid {
  int lanes = 1, rows = 0, channel_blocks = 0, splits = 1, rows_per_split = 0;
};

RadixPoolGrid radix_pool_grid(int n, int hw, int c, int v) {
  RadixPoolGrid g;
  // Lanes along the channel packs (a power of two up to 32), the rest of the block along the pixels.
  const int packs = c / v;
  while (g.lanes < packs && g.lanes < 32) g.lanes *= 2;
  g.rows = kPoolThreads / g.lanes;
  g.channel_blocks = (packs + g.lanes - 1) / g.lanes;
  // Split the pixels so that the grid covers the chip about twice (132 multiprocessors on the H200),
  // but give every thread a few pixels: the last block of each column adds every split's sums.
  const int wanted = std::max(1, 264 / (g.channel_blocks * n));
  const int per_split = g.rows * kPoolRowsPerThread;
  g.splits = std::max(1, std::min(wanted, (hw + per_split - 1) / per_split));
  g.rows_per_split = (hw + g.splits - 1) / g.splits;
  return g;
}

// radix_pool_kernel over [n, hw, radix * c]; `partial` holds the splits' sums, then the block counters.
template <typename T, int V, bool kSqueeze>
cudaError_t launch_radix_pool(const T* x, T* y, float* partial, int n, int hw, int radix, int c,
                              const CodesOut& codes, const SqueezeTail<T>& tail, cudaStream_t stream) {
  const RadixPoolGrid g = radix_pool_grid(n, hw, c, V);
  auto* counters = reinterpret_cast<unsigned*>(partial + static_cast<std::int64_t>(g.splits) * n * c);
  return launch_early(radix_pool_kernel<T, V, kSqueeze>, dim3(g.channel_blocks, n, g.splits),
                      dim3(g.lanes, g.rows), 0, stream, x, y, partial, counters, hw, radix, c,
                      g.rows_per_split, 1.0f / static_cast<float>(hw), codes, tail);
}

// Channels per thread for `e` and `c`, as dispatch() chooses them.
int pool_pack(Elem e, int c) {
  if (e == Elem::kF32) return c % kPack<float> == 0 ? kPack<float> : 1;
  return c % kPack<__half> == 0 ? kPack<__half> : 1;
}

}  // namespace

cudaError_t max_pool(const void* x, void* y, Elem e, const PoolShape& s, cudaStream_t stream,
                     const CodesOut& codes) {
  return dispatch(e, s.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * (s.c / V);
    launch_early(pool_kernel<T, V, true>, blocks_for(total), kBlock, 0, stream, static_cast<const T*>(x),
                 static_cast<T*>(y), s, codes);
    return cudaGetLastError();
  });
}

cudaError_t max_pool_cascade(const PoolCascade& cascade, Elem e, cudaStream_t stream) {
  PoolCascade p = cascade;
  if (p.x_pitch == 0) p.x_pitch = p.c;
  for (std::int64_t& pitch : p.y_pitch) pitch = pitch == 0 ? p.c : pitch;
  return dispatch(e, p.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::size_t shared = static_cast<std::size_t>(p.outputs + 1) * p.h * p.w * V * sizeof(T);
    if (p.h * p.w > kPoolCascadeMaxPixels || shared > 48 * 1024) return cudaErrorInvalidValue;
    const int blocks = p.n * (p.c / V);
    launch_early(max_pool_cascade_kernel<T, V>, blocks, kBlock, shared, stream, p);
    return cudaGetLastError();
  });
}

cudaError_t avg_pool(const void* x, void* y, Elem e, const PoolShape& s, cudaStream_t stream,
                     const CodesOut& codes) {
  return dispatch(e, s.c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const std::int64_t total = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w * (s.c / V);
    launch_early(pool_kernel<T, V, false>, blocks_for(total), kBlock, 0, stream, static_cast<const T*>(x),
                 static_cast<T*>(y), s, codes);
    return cudaGetLastError();
  });
}

std::size_t radix_global_pool_scratch(Elem e, int n, int hw, int c) {
  const RadixPoolGrid g = radix_pool_grid(n, hw, c, pool_pack(e, c));
  const auto sums =
      static_cast<std::size_t>(g.splits) * static_cast<std::size_t>(n) * static_cast<std::size_t>(c);
  const auto counters = static_cast<std::size_t>(n) * static_cast<std::size_t>(g.channel_blocks);
  return sums * sizeof(float) + counters * sizeof(unsigned);
}

cudaError_t radix_global_pool(const void* x, void* y, float* partial, Elem e, int n, int hw, int radix, int c,
                              cudaStream_t stream, const CodesOut& codes) {
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    return launch_radix_pool<T, V, false>(static_cast<const T*>(x), static_cast<T*>(y), partial, n, hw, radix,
                                          c, codes, SqueezeTail<T>{}, stream);
  });
}

namespace {

// squeeze_pool's scratch: the global pool's (per-split sums, column counters), each channel block's sums
// per hidden unit, then one counter per image; each part 16-byte aligned.
struct SqueezeScratch {
  std::size_t sums = 0, image_counters = 0, bytes = 0;
};

SqueezeScratch squeeze_scratch_layout(Elem e, int n, int hw, int c, int units) {
  const auto align16 = [](std::size_t b) { return (b + 15) / 16 * 16; };
  const RadixPoolGrid g = radix_pool_grid(n, hw, c, pool_pack(e, c));
  SqueezeScratch s;
  s.sums = align16(radix_global_pool_scratch(e, n, hw, c));
  s.image_counters =
      align16(s.sums + static_cast<std::size_t>(n) * static_cast<std::size_t>(g.channel_blocks) *
                           static_cast<std::size_t>(units) * sizeof(float));
  s.bytes = s.image_counters + static_cast<std::size_t>(n) * sizeof(unsigned);
  return s;
}

}  // namespace

std::size_t squeeze_pool_scratch(Elem e, int n, int hw, int c, int units) {
  return squeeze_scratch_layout(e, n, hw, c, units).bytes;
}

cudaError_t squeeze_pool(const void* x, void* scratch, Elem e, int n, int hw, int c, const SqueezeArgs& a,
                         cudaStream_t stream) {
  if (!squeeze_excite_fits(c, a.units, c)) return cudaErrorInvalidValue;
  const SqueezeScratch layout = squeeze_scratch_layout(e, n, hw, c, a.units);
  auto* bytes = static_cast<std::byte*>(scratch);
  auto* partial = reinterpret_cast<float*>(bytes);
  return dispatch(e, c, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    SqueezeTail<T> tail;
    tail.w1 = static_cast<const T*>(a.w1);
    tail.b1 = static_cast<const T*>(a.b1);
    tail.hidden = static_cast<T*>(a.hidden);
    tail.partial = reinterpret_cast<float*>(bytes + layout.sums);
    tail.image_counters = reinterpret_cast<unsigned*>(bytes + layout.image_counters);
    tail.units = a.units;
    tail.act = a.act;
    return launch_radix_pool<T, V, true>(static_cast<const T*>(x), nullptr, partial, n, hw, 1, c, CodesOut{},
                                         tail, stream);
  });
}

}  // namespace kiln::cuda
