// The CUDA kernels of image preprocessing: 8-bit RGB in, the network's f32 NCHW input out, following the
// tables of io/resample_tables.h so that the bytes equal the CPU path's (device_preprocess.h drives them).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// One axis of PIL's separable resampling, in device memory (io/resample_tables.h's ResampleAxis).
struct ResampleTable {
  const std::int32_t* start = nullptr;
  const std::int32_t* length = nullptr;
  const std::int32_t* weights = nullptr;
  int taps = 0;
  int count = 0;  // output samples
};

// Horizontal pass: rows [row_begin, row_begin + rows) of `image` (HWC u8, `width` pixels a row) resampled
// to `columns.count` pixels: out is [rows, columns.count, 3] u8.
cudaError_t resample_rows(const std::uint8_t* image, int width, int row_begin, int rows,
                          ResampleTable columns, std::uint8_t* out, cudaStream_t stream);

// Vertical pass fused with ToTensor and Normalize: `rows_in` ([*, width, 3] u8, whose row 0 is source
// row `row_offset`) resampled to `rows.count` rows, each value v written to out[c][y][x] (f32 NCHW) as
// (v / 255 - mean[c]) / std[c] in f32, each step correctly rounded.
struct Normalize {
  float mean[3];
  float std[3];
};
cudaError_t resample_columns_normalize(const std::uint8_t* rows_in, int width, int row_offset,
                                       ResampleTable rows, Normalize normalize, float* out,
                                       cudaStream_t stream);

// OpenCV's INTER_LINEAR taps of one axis (io/resample_tables.h's LinearTap), in device memory as
// {index, weight0, weight1} triples.
// YOLO's letterbox: `image` ([height, width, 3] u8) scaled by the taps to scaled_width x scaled_height at
// (left, top) of a size x size square filled with `fill`, written as f32 NCHW RGB / 255.
struct LetterboxArgs {
  const std::uint8_t* image = nullptr;
  int width = 0, height = 0;
  const std::int32_t* x_taps = nullptr;  // scaled_width triples
  const std::int32_t* y_taps = nullptr;  // scaled_height triples
  int scaled_width = 0, scaled_height = 0;
  int left = 0, top = 0, size = 0;
  std::uint8_t fill = 0;
};
cudaError_t letterbox_normalize(const LetterboxArgs& args, float* out, cudaStream_t stream);

}  // namespace kiln::cuda
