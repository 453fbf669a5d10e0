// CUDA kernels that move NHWC tensors without arithmetic (see kernel_types.h): the column gather behind
// concat and channel_slice, and nearest upsampling. They copy raw elements, so fp16 and f32 share them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// Columns [dst_offset, dst_offset + width) of every output row come from `src`, whose rows are
// `src_pitch` elements apart (element counts, not bytes).
struct ColumnSource {
  const void* src;
  std::int64_t src_pitch;
  std::int64_t width;
  std::int64_t dst_offset;
};

// y[row, source.dst_offset + j] = source.src[row * source.src_pitch + j] for every row < rows, every
// source and j < source.width; y's rows are `y_pitch` elements apart. The sources cover their columns
// one after another (each dst_offset is the previous source's dst_offset + width). A concat is one
// source per input, a channel slice one per group.
cudaError_t gather_columns(const std::vector<ColumnSource>& sources, void* y, Elem e, std::int64_t rows,
                           std::int64_t y_pitch, cudaStream_t stream);

// Elements between neighbouring pixels of x and y where they are channel views of wider tensors; 0: packed.
struct UpsamplePitches {
  std::int64_t x = 0, y = 0;
};

// x [n, h, w, c] -> y [n, h * scale, w * scale, c], each output pixel the input pixel it falls in.
cudaError_t upsample_nearest(const void* x, void* y, Elem e, int n, int h, int w, int c, int scale,
                             cudaStream_t stream, const UpsamplePitches& pitches = {});

}  // namespace kiln::cuda
