// Staging of qkv rows into shared memory, shared by the attention kernels (attention_kernels.h).
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"

namespace kiln::cuda {

// 16-byte loads each thread issues before it waits for any. Loading one value at a time and waiting on each,
// staging took most of YOLOv10n's batch-1 attention; with loads in flight it takes about half as long.
inline constexpr int kRowLoadsInFlight = 4;

template <typename T>
__device__ bool rows_take_16_bytes(const T* image, int channels, int offset, int width) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  return reinterpret_cast<std::uintptr_t>(image) % 16 == 0 && channels % kPer == 0 && offset % kPer == 0 &&
         width % kPer == 0;
}

// As load_attention_rows, where every row starts on 16 bytes and holds whole 16-byte packs.
template <typename T>
__device__ void load_attention_rows_16(const T* image, int pixels, int channels, int first, int rows,
                                       int offset, int width, float* dst, int pitch) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const int packs_per_row = width / kPer, packs = rows * packs_per_row, stride = static_cast<int>(blockDim.x);
  for (int begin = static_cast<int>(threadIdx.x); begin < packs; begin += kRowLoadsInFlight * stride) {
    uint4 loaded[kRowLoadsInFlight];
#pragma unroll
    for (int j = 0; j < kRowLoadsInFlight; ++j) {
      const int i = begin + j * stride, pixel = first + i / packs_per_row;
      loaded[j] = i < packs && pixel < pixels
                      ? *reinterpret_cast<const uint4*>(image + static_cast<std::int64_t>(pixel) * channels +
                                                        offset + i % packs_per_row * kPer)
                      : make_uint4(0, 0, 0, 0);  // zero bits: 0.0 in f32 and fp16
    }
#pragma unroll
    for (int j = 0; j < kRowLoadsInFlight; ++j) {
      const int i = begin + j * stride;
      if (i >= packs) break;
      const T* values = reinterpret_cast<const T*>(&loaded[j]);
      float* out = dst + i / packs_per_row * pitch + i % packs_per_row * kPer;
#pragma unroll
      for (int e = 0; e < kPer; ++e) out[e] = to_float(values[e]);
    }
  }
}

// rows x width channels of pixels [first, first + rows) starting at channel `offset` of each pixel's
// qkv row, into dst with rows `pitch` apart, by the whole block; pixels past the image read as zeros.
template <typename T>
__device__ void load_attention_rows(const T* image, int pixels, int channels, int first, int rows, int offset,
                                    int width, float* dst, int pitch) {
  if (rows_take_16_bytes(image, channels, offset, width)) {
    load_attention_rows_16(image, pixels, channels, first, rows, offset, width, dst, pitch);
    return;
  }
  for (int i = threadIdx.x; i < rows * width; i += blockDim.x) {
    const int row = i / width, d = i % width, pixel = first + row;
    dst[row * pitch + d] =
        pixel < pixels ? to_float(image[static_cast<std::int64_t>(pixel) * channels + offset + d]) : 0.0f;
  }
}

}  // namespace kiln::cuda
