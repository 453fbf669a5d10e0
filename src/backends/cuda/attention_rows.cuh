// Staging of qkv rows into shared memory, shared by the attention kernels (attention_kernels.h).
#pragma once

#include <cstdint>

#include "backends/cuda/device_math.cuh"

namespace kiln::cuda {

// rows x width channels of pixels [first, first + rows) starting at channel `offset` of each pixel's
// qkv row, into dst with rows `pitch` apart, by the whole block; pixels past the image read as zeros.
template <typename T>
__device__ void load_attention_rows(const T* image, int pixels, int channels, int first, int rows, int offset,
                                    int width, float* dst, int pitch) {
  for (int i = threadIdx.x; i < rows * width; i += blockDim.x) {
    const int row = i / width, d = i % width, pixel = first + row;
    dst[row * pitch + d] =
        pixel < pixels ? to_float(image[static_cast<std::int64_t>(pixel) * channels + offset + d]) : 0.0f;
  }
}

}  // namespace kiln::cuda
