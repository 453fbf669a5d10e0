// The narrow-input convolution kernel (see narrow_conv_kernels.h). A block computes a tile of up to
// 32 x kPixels output pixels, every output channel, in kRowsPerBlock consecutive output rows. It copies
// every weight to shared memory as f32 once, and per row the input rows the tile reads (padding as
// zeros), in coalesced loads: with 3 channels a pixel is 6 bytes, and reading pixels straight from global
// memory scattered every warp's loads over many cache lines (slower than cuDNN, measured). Each thread then
// computes one pack of output channels (16 bytes where the channel count allows) for kPixels pixels spaced a
// warp's worth of lanes apart, so that the lanes of a warp read neighbouring pixels from different
// shared-memory banks, and each weight it reads serves kPixels multiply-adds. On the H200 this version
// still loses to cuDNN on YOLOv10's and EfficientNet's stems (the race keeps cuDNN's there): each thread
// has one row load in flight at a time, so loading the rows is latency-bound.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/narrow_conv_kernels.h"

namespace kiln::cuda {
namespace {

constexpr int kPixels = 4;
constexpr int kMaxLanes = 32;  // threads per pack along the row: a tile is at most 128 pixels
constexpr int kRowsPerBlock = 4;

// The tile's layout: `lanes` threads per pack, each computing kPixels pixels `lanes` apart.
struct NarrowTile {
  int lanes;
  int span;    // input columns the tile reads
  int floats;  // shared memory: weights, then kernel_h input rows of span * c values
};

__host__ __device__ inline NarrowTile narrow_tile(const NarrowConvShape& s, int lanes) {
  const int span = (lanes * kPixels - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  return {lanes, span, s.kernel_h * s.kernel_w * s.c * s.k + s.kernel_h * span * s.c};
}

// The input rows output row `out_row` (image * out_h + oy) reads from column ix0 on, zeros outside the
// image: each row's values are consecutive in memory, so the loads coalesce.
template <typename T>
__device__ void load_rows(const T* x, const NarrowConvShape& s, const NarrowTile& t, std::int64_t out_row,
                          int ix0, float* rows) {
  const std::int64_t image = out_row / s.out_h;
  const int oy = static_cast<int>(out_row % s.out_h), row_values = t.span * s.c;
  // The values inside the image's columns: [first, last).
  const int first = ix0 < 0 ? -ix0 * s.c : 0, last = (s.in_w - ix0) * s.c;
  for (int ky = 0; ky < s.kernel_h; ++ky) {
    const int iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
    const bool row_inside = iy >= 0 && iy < s.in_h;
    const T* row = x + ((image * s.in_h + iy) * s.in_w + ix0) * s.c;
    for (int v = threadIdx.x; v < row_values; v += blockDim.x)
      rows[ky * row_values + v] = row_inside && v >= first && v < last ? to_float(row[v]) : 0.0f;
  }
}

template <int V>
__device__ inline void load_weights(const float* p, float (&w)[V]) {
  if constexpr (V % 4 == 0) {  // k and the pack's first channel are multiples of 4: aligned
#pragma unroll
    for (int j = 0; j < V; j += 4) {
      const float4 q = *reinterpret_cast<const float4*>(p + j);
      w[j] = q.x, w[j + 1] = q.y, w[j + 2] = q.z, w[j + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) w[j] = p[j];
  }
}

// One output row of the tile from the staged weights and input rows.
template <typename T, int V>
__device__ void narrow_conv_row(const float* weights, const float* rows, const float (&b)[V],
                                const T* residual, T* y, const NarrowConvShape& s, const NarrowTile& t,
                                std::int64_t out_row, int ox0, int channel, int lane, Act act) {
  float acc[kPixels][V] = {};
  for (int ky = 0; ky < s.kernel_h; ++ky) {
    const float* row = rows + ky * t.span * s.c;
    for (int kx = 0; kx < s.kernel_w; ++kx) {
      const float* tap = weights + (ky * s.kernel_w + kx) * s.c * s.k + channel;
      for (int ci = 0; ci < s.c; ++ci) {
        float w[V];
        load_weights<V>(tap + ci * s.k, w);
#pragma unroll
        for (int p = 0; p < kPixels; ++p) {
          const float v = row[((lane + p * t.lanes) * s.stride_w + kx * s.dilation_w) * s.c + ci];
#pragma unroll
          for (int j = 0; j < V; ++j) acc[p][j] += v * w[j];
        }
      }
    }
  }
#pragma unroll
  for (int p = 0; p < kPixels; ++p) {
    const int ox = ox0 + lane + p * t.lanes;
    if (ox >= s.out_w) break;
    const std::int64_t offset = (out_row * s.out_w + ox) * s.k + channel;
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
                       NarrowTile t, Act act) {
  extern __shared__ float shared[];
  float* weights = shared;
  float* rows = shared + s.kernel_h * s.kernel_w * s.c * s.k;
  const int weight_count = s.kernel_h * s.kernel_w * s.c * s.k;
  for (int j = threadIdx.x; j < weight_count; j += blockDim.x) weights[j] = to_float(weight[j]);
  const int tile = t.lanes * kPixels, tiles = (s.out_w + tile - 1) / tile;
  const int ox0 = static_cast<int>(blockIdx.x % tiles) * tile;
  const int packs = s.k / V;
  const int channel = static_cast<int>(threadIdx.x % packs) * V, lane = static_cast<int>(threadIdx.x / packs);
  float b[V];
  load<T, V>(bias + channel, b);
  // kRowsPerBlock consecutive output rows (image * out_h + oy) share the weights' copy.
  const std::int64_t out_rows = static_cast<std::int64_t>(s.n) * s.out_h;
  const std::int64_t first_row = blockIdx.x / tiles * static_cast<std::int64_t>(kRowsPerBlock);
  for (std::int64_t out_row = first_row; out_row < first_row + kRowsPerBlock && out_row < out_rows;
       ++out_row) {
    __syncthreads();  // the previous row's reads of `rows` are done
    load_rows(x, s, t, out_row, ox0 * s.stride_w - s.pad_w, rows);
    __syncthreads();
    narrow_conv_row<T, V>(weights, rows, b, residual, y, s, t, out_row, ox0, channel, lane, act);
  }
}

}  // namespace

cudaError_t narrow_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                        Elem e, const NarrowConvShape& s, Act act, cudaStream_t stream) {
  return dispatch(e, s.k, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const int packs = s.k / V;
    // As many lanes as the row needs, up to kMaxLanes, within the block's threads and shared memory.
    int lanes = std::min({kMaxLanes, (s.out_w + kPixels - 1) / kPixels, std::max(kBlock / packs, 1)});
    while (lanes > 1 && narrow_tile(s, lanes).floats > kNarrowMaxSharedFloats) lanes /= 2;
    const NarrowTile t = narrow_tile(s, lanes);
    if (packs * lanes > kBlock || t.floats > kNarrowMaxSharedFloats) return cudaErrorInvalidConfiguration;
    const int tile = lanes * kPixels;
    const std::int64_t row_groups =
        (static_cast<std::int64_t>(s.n) * s.out_h + kRowsPerBlock - 1) / kRowsPerBlock;
    const std::int64_t blocks = row_groups * ((s.out_w + tile - 1) / tile);
    if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
    narrow_conv_kernel<T, V>
        <<<static_cast<unsigned>(blocks), packs * lanes, sizeof(float) * t.floats, stream>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
            static_cast<const T*>(residual), static_cast<T*>(y), s, t, act);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
