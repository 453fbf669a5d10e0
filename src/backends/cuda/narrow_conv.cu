// The narrow-input convolution kernel (see narrow_conv_kernels.h). A block computes a tile of up to
// 32 x kPixels output pixels, every output channel, in kRowsPerBlock neighbouring output rows of one
// image. It first copies every weight and every input row those output rows read (the rows they share
// once; padding as zeros) to shared memory as f32. The input rows are consecutive values in memory, read
// kLoadsAtOnce per thread before any is stored so that many loads are in flight: with 3 channels a pixel
// is 6 bytes, and reading pixels straight from global memory (a first version) scattered every warp's
// loads over many cache lines. Each thread then computes one pack of output channels (16 bytes where the
// channel count allows) for kPixels pixels spaced a warp's worth of lanes apart, so that the lanes of a
// warp read neighbouring pixels from different shared-memory banks, and each weight it reads serves
// kPixels multiply-adds.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/narrow_conv_kernels.h"

namespace kiln::cuda {
namespace {

constexpr int kPixels = 4;
constexpr int kMaxLanes = 32;  // threads per pack along the row: a tile is at most 128 pixels
constexpr int kRowsPerBlock = 4;
constexpr int kLoadsAtOnce = 8;

// The tile's layout: `lanes` threads per pack, each computing kPixels pixels `lanes` apart.
struct NarrowTile {
  int lanes;
  int span;        // input columns the tile reads
  int input_rows;  // input rows kRowsPerBlock output rows read
  int floats;      // shared memory: the weights, then input_rows rows of span * c values
};

__host__ __device__ inline NarrowTile narrow_tile(const NarrowConvShape& s, int lanes) {
  const int span = (lanes * kPixels - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  const int input_rows = (kRowsPerBlock - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  return {lanes, span, input_rows, s.kernel_h * s.kernel_w * s.c * s.k + input_rows * span * s.c};
}

// The tile's input rows from row iy0 and column ix0 on, zeros outside the image.
template <typename T>
__device__ void load_rows(const T* image, const NarrowConvShape& s, const NarrowTile& t, int iy0, int ix0,
                          float* rows) {
  const int row_values = t.span * s.c, total = t.input_rows * row_values;
  // The values inside the image's columns: [first, last).
  const int first = ix0 < 0 ? -ix0 * s.c : 0, last = (s.in_w - ix0) * s.c;
  const int step = static_cast<int>(blockDim.x);
  for (int base = static_cast<int>(threadIdx.x); base < total; base += step * kLoadsAtOnce) {
    float v[kLoadsAtOnce];
#pragma unroll
    for (int u = 0; u < kLoadsAtOnce; ++u) {
      const int i = base + u * step, r = i / row_values, value = i - r * row_values, iy = iy0 + r;
      const bool inside = i < total && iy >= 0 && iy < s.in_h && value >= first && value < last;
      v[u] = inside ? to_float(image[(static_cast<std::int64_t>(iy) * s.in_w + ix0) * s.c + value]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kLoadsAtOnce; ++u)
      if (base + u * step < total) rows[base + u * step] = v[u];
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

// The tile's pixels of one output row (`rows`: its first input row staged) into y_row.
template <typename T, int V>
__device__ void narrow_conv_row(const float* weights, const float* rows, const float (&b)[V],
                                const T* residual_row, T* y_row, const NarrowConvShape& s,
                                const NarrowTile& t, int ox0, int channel, int lane, Act act) {
  float acc[kPixels][V] = {};
  for (int ky = 0; ky < s.kernel_h; ++ky) {
    const float* row = rows + ky * s.dilation_h * t.span * s.c;
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
    const std::int64_t offset = static_cast<std::int64_t>(ox) * s.k + channel;
    float r[V] = {};
    if (residual_row != nullptr) load<T, V>(residual_row + offset, r);
#pragma unroll
    for (int j = 0; j < V; ++j) acc[p][j] = activate(acc[p][j] + b[j] + r[j], act);
    store<T, V>(y_row + offset, acc[p]);
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlock)
    narrow_conv_kernel(const T* x, const T* weight, const T* bias, const T* residual, T* y, NarrowConvShape s,
                       NarrowTile t, Act act) {
  extern __shared__ float shared[];
  float* weights = shared;
  const int weight_count = s.kernel_h * s.kernel_w * s.c * s.k;
  float* rows = shared + weight_count;
  // blockIdx.x runs over (image, group of kRowsPerBlock output rows, tile) with the tile fastest.
  const int tile = t.lanes * kPixels, tiles = (s.out_w + tile - 1) / tile;
  const int groups = (s.out_h + kRowsPerBlock - 1) / kRowsPerBlock;
  const int ox0 = static_cast<int>(blockIdx.x % tiles) * tile;
  const int oy0 = static_cast<int>(blockIdx.x / tiles % groups) * kRowsPerBlock;
  const std::int64_t image = blockIdx.x / tiles / groups;
  for (int j = threadIdx.x; j < weight_count; j += blockDim.x) weights[j] = to_float(weight[j]);
  load_rows(x + image * s.in_h * s.in_w * s.c, s, t, oy0 * s.stride_h - s.pad_h, ox0 * s.stride_w - s.pad_w,
            rows);
  __syncthreads();
  const int packs = s.k / V;
  const int channel = static_cast<int>(threadIdx.x % packs) * V, lane = static_cast<int>(threadIdx.x / packs);
  float b[V];
  load<T, V>(bias + channel, b);
  for (int q = 0; q < kRowsPerBlock && oy0 + q < s.out_h; ++q) {
    const std::int64_t y_row = ((image * s.out_h + oy0 + q) * s.out_w) * s.k;
    narrow_conv_row<T, V>(weights, rows + q * s.stride_h * t.span * s.c, b,
                          residual != nullptr ? residual + y_row : nullptr, y + y_row, s, t, ox0, channel,
                          lane, act);
  }
}

// RGB stems (narrow_conv_kernels.h): one thread per output pixel computes all K outputs, its 27 inputs
// read from global memory (neighbouring threads' windows overlap, so most reads hit L1). The weights are a
// launch argument: each multiply-add takes its weight from the constant cache, broadcast to the warp, at
// an offset known when compiling. YOLOv10's 640 x 640 stem at batch 32 on the H200: cuDNN 275 us (K 16)
// and 311 us (K 32); the tiled kernel above 543 us (K 16, 21% occupancy); this kernel with its weights in
// shared memory 151 and 302 us, each multiply-add waiting on a shared-memory load.
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

bool narrow_conv_takes(const NarrowConvShape& s) {
  const std::int64_t weights = std::int64_t{s.kernel_h} * s.kernel_w * s.c * s.k;
  return s.c >= 1 && s.c <= kNarrowMaxChannels && s.k >= 1 && s.k <= kNarrowMaxOutputs &&
         weights <= kNarrowMaxWeights && narrow_tile(s, 1).floats <= kNarrowMaxSharedFloats;
}

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
    const std::int64_t blocks = static_cast<std::int64_t>(s.n) *
                                ((s.out_h + kRowsPerBlock - 1) / kRowsPerBlock) *
                                ((s.out_w + tile - 1) / tile);
    if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
    narrow_conv_kernel<T, V>
        <<<static_cast<unsigned>(blocks), packs * lanes, sizeof(float) * t.floats, stream>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
            static_cast<const T*>(residual), static_cast<T*>(y), s, t, act);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
