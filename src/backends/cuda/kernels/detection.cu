// The detection decode kernel (see detection_kernels.h). A block takes a tile of consecutive pixels: it
// copies their bins and logits (two runs of rows) to shared memory in 16-byte loads, computes each pixel's
// four expected distances once, computes the tile's outputs one thread per value into shared memory, then
// copies them out (contiguous too) in 16-byte stores. The one-thread-per-output kernel, whose four box values
// each recompute the two distances they need from global memory, stays for rows too wide for the tile; both
// compute every value with the same expressions, so they agree bit for bit.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/detection_kernels.h"
#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

// The mean bin of the softmax over `bins` logits.
template <typename T>
__device__ float expected_bin(const T* logits, int bins) {
  float peak = -INFINITY;
  for (int b = 0; b < bins; ++b) peak = fmaxf(peak, to_float(logits[b]));
  float sum = 0.0f, mean = 0.0f;
  for (int b = 0; b < bins; ++b) {
    const float e = expf(to_float(logits[b]) - peak);
    sum += e;
    mean += e * static_cast<float>(b);
  }
  return mean / sum;
}

// DecodeSources with their element type.
template <typename T>
struct Sources {
  const T* box;
  const T* classes;
  int box_pitch, class_pitch;
};

template <typename T>
__device__ float class_score(const T* logits, int c) {
  return 1.0f / (1.0f + expf(-to_float(logits[c - 4])));
}

template <typename T>
__global__ void detect_decode_kernel(Sources<T> x, T* y, DetectShape s) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const int out_channels = 4 + s.classes;
  const std::int64_t pixels = static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= s.n * pixels * out_channels) return;
  const int c = static_cast<int>(i % out_channels);
  const std::int64_t row = i / out_channels;  // image * pixels + pixel
  const int pixel = static_cast<int>(row % pixels);
  const T* in = x.box + row * x.box_pitch;
  float value;
  if (c >= 4) {
    value = class_score(x.classes + row * x.class_pitch, c);
  } else {
    // Values 0 and 2 (centre x, width) span the left and right distances; 1 and 3 the top and bottom.
    const int axis = c % 2;
    const float near = expected_bin(in + axis * s.reg_max, s.reg_max);
    const float far = expected_bin(in + (axis + 2) * s.reg_max, s.reg_max);
    const float centre = static_cast<float>(axis == 0 ? pixel % s.w : pixel / s.w) + 0.5f;
    const float low = centre - near, high = centre + far;
    value = (c < 2 ? (low + high) / 2.0f : high - low) * static_cast<float>(s.stride);
  }
  y[i] = from_float<T>(value);
}

// The most shared memory a tile may take (no opt-in needed), and the row counts where tiles pay: below
// kFewRows the one-thread-per-output kernel's shorter path wins; up to kManyRows small tiles keep every
// SM busy, past it large tiles share the load better.
constexpr std::size_t kTileBytes = 48 * 1024;
constexpr std::int64_t kFewRows = 2048, kManyRows = 65536;

// The value of output channel c (a box value from the pixel's left, top, right and bottom distances, or a
// class's sigmoid) as detect_decode_kernel computes it.
// `row` is the pixel's row in the batch; its pixel index is needed by the box values only.
template <typename T>
__device__ float decoded_value(const T* logits, const float* distance, int c, std::int64_t row,
                               const DetectShape& s) {
  if (c >= 4) return class_score(logits, c);
  const int pixel = static_cast<int>(row % (static_cast<std::int64_t>(s.h) * s.w));
  const int axis = c % 2;
  const float near = distance[axis], far = distance[axis + 2];
  const float centre = static_cast<float>(axis == 0 ? pixel % s.w : pixel / s.w) + 0.5f;
  const float low = centre - near, high = centre + far;
  return (c < 2 ? (low + high) / 2.0f : high - low) * static_cast<float>(s.stride);
}

// Copies `count` values between global and shared memory, 16 bytes a thread where both ends are 16-byte
// aligned, the rest one value a thread: one value a thread, the tile's copies were 2-byte accesses, which
// left the decode of YOLOv10n's largest level far below the memory's bandwidth.
template <typename T>
__device__ void copy_values(const T* from, T* to, int count) {
  int done = 0;
  if (reinterpret_cast<std::uintptr_t>(from) % 16 == 0 && reinterpret_cast<std::uintptr_t>(to) % 16 == 0) {
    constexpr int kPer = 16 / static_cast<int>(sizeof(T));
    const int packs = count / kPer;
    for (int i = static_cast<int>(threadIdx.x); i < packs; i += static_cast<int>(blockDim.x))
      reinterpret_cast<uint4*>(to)[i] = reinterpret_cast<const uint4*>(from)[i];
    done = packs * kPer;
  }
  for (int i = done + static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x))
    to[i] = from[i];
}

// Copies `rows` rows of `width` values, `pitch` apart in global memory, to consecutive rows in shared
// memory: 16 bytes a thread where rows and both ends allow, else one value a thread.
template <typename T>
__device__ void copy_rows(const T* from, int pitch, T* to, int width, int rows) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  if (reinterpret_cast<std::uintptr_t>(from) % 16 == 0 && reinterpret_cast<std::uintptr_t>(to) % 16 == 0 &&
      width % kPer == 0 && pitch % kPer == 0) {
    const int packs = width / kPer, pitch_packs = pitch / kPer;
    for (int i = static_cast<int>(threadIdx.x); i < rows * packs; i += static_cast<int>(blockDim.x))
      reinterpret_cast<uint4*>(to)[i] =
          reinterpret_cast<const uint4*>(from)[(i / packs) * pitch_packs + i % packs];
    return;
  }
  for (int i = static_cast<int>(threadIdx.x); i < rows * width; i += static_cast<int>(blockDim.x))
    to[i] = from[static_cast<std::int64_t>(i / width) * pitch + i % width];
}

// Shared memory of a tile of `rows` pixels: their four distances (f32), their bins, their logits, then
// their output rows, each part starting on 16 bytes.
struct DecodeTileLayout {
  std::size_t boxes = 0, classes = 0, outputs = 0, bytes = 0;
};

__host__ __device__ inline std::size_t round_up16(std::size_t b) { return (b + 15) / 16 * 16; }

__host__ __device__ inline DecodeTileLayout decode_tile_layout(int rows, const DetectShape& s,
                                                               std::size_t elem) {
  DecodeTileLayout t;
  t.boxes = round_up16(static_cast<std::size_t>(rows) * 4 * sizeof(float));
  t.classes = t.boxes + round_up16(static_cast<std::size_t>(rows) * 4 * s.reg_max * elem);
  t.outputs = t.classes + round_up16(static_cast<std::size_t>(rows) * s.classes * elem);
  t.bytes = t.outputs + round_up16(static_cast<std::size_t>(rows) * (4 + s.classes) * elem);
  return t;
}

template <typename T, int kTilePixels>
__global__ void detect_decode_tiled(Sources<T> x, T* y, DetectShape s) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  extern __shared__ __align__(16) unsigned char shared[];
  const DecodeTileLayout layout = decode_tile_layout(kTilePixels, s, sizeof(T));
  auto* distances = reinterpret_cast<float*>(shared);  // [kTilePixels][4]
  T* bins = reinterpret_cast<T*>(shared + layout.boxes);
  T* logits = reinterpret_cast<T*>(shared + layout.classes);
  T* decoded = reinterpret_cast<T*>(shared + layout.outputs);
  const int out_channels = 4 + s.classes, box_channels = 4 * s.reg_max;
  const std::int64_t rows = s.n * static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t first_row = static_cast<std::int64_t>(blockIdx.x) * kTilePixels;
  const int tile_rows = static_cast<int>(rows - first_row < kTilePixels ? rows - first_row : kTilePixels);
  copy_rows(x.box + first_row * x.box_pitch, x.box_pitch, bins, box_channels, tile_rows);
  copy_rows(x.classes + first_row * x.class_pitch, x.class_pitch, logits, s.classes, tile_rows);
  __syncthreads();
  for (int task = static_cast<int>(threadIdx.x); task < tile_rows * 4; task += blockDim.x) {
    const int r = task / 4, side = task % 4;
    distances[task] = expected_bin(bins + r * box_channels + side * s.reg_max, s.reg_max);
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < tile_rows * out_channels; i += blockDim.x) {
    const int r = i / out_channels, c = i % out_channels;
    decoded[i] = from_float<T>(decoded_value(logits + r * s.classes, distances + r * 4, c, first_row + r, s));
  }
  __syncthreads();
  copy_values(decoded, y + first_row * out_channels, tile_rows * out_channels);
}

template <typename T, int kTilePixels>
void launch_tiled(const Sources<T>& x, T* y, const DetectShape& s, std::int64_t rows, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kTilePixels - 1) / kTilePixels);
  const std::size_t bytes = decode_tile_layout(kTilePixels, s, sizeof(T)).bytes;
  launch_early(detect_decode_tiled<T, kTilePixels>, blocks, kBlock, bytes, stream, x, y, s);
}

template <typename T>
void launch_decode(const Sources<T>& x, T* y, const DetectShape& s, std::int64_t total, cudaStream_t stream) {
  constexpr int kLargeTile = 32, kSmallTile = 8;
  const std::int64_t rows = static_cast<std::int64_t>(s.n) * s.h * s.w;
  if (rows < kFewRows || decode_tile_layout(kLargeTile, s, sizeof(T)).bytes > kTileBytes) {
    launch_early(detect_decode_kernel<T>, blocks_for(total), kBlock, 0, stream, x, y, s);
  } else if (rows < kManyRows) {
    launch_tiled<T, kSmallTile>(x, y, s, rows, stream);
  } else {
    launch_tiled<T, kLargeTile>(x, y, s, rows, stream);
  }
}

}  // namespace

DecodeSources packed_decode_sources(const void* x, const DetectShape& s, Elem e) {
  const int pitch = 4 * s.reg_max + s.classes;
  const std::size_t box_bytes = static_cast<std::size_t>(4 * s.reg_max) * elem_bytes(e);
  return {x, static_cast<const unsigned char*>(x) + box_bytes, pitch, pitch};
}

cudaError_t detect_decode(const DecodeSources& x, void* y, Elem e, const DetectShape& s,
                          cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.h * s.w * (4 + s.classes);
  if (total == 0) return cudaSuccess;
  if (e == Elem::kF32) {
    const Sources<float> typed{static_cast<const float*>(x.box), static_cast<const float*>(x.classes),
                               x.box_pitch, x.class_pitch};
    launch_decode(typed, static_cast<float*>(y), s, total, stream);
  } else {
    const Sources<__half> typed{static_cast<const __half*>(x.box), static_cast<const __half*>(x.classes),
                                x.box_pitch, x.class_pitch};
    launch_decode(typed, static_cast<__half*>(y), s, total, stream);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
