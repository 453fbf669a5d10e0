// The arithmetic plan of kiln's two 8-bit resizes, as tables any device can follow to the same bytes:
// PIL's separable resampling (timm's eval transform) and OpenCV's INTER_LINEAR (YOLO's letterbox). The
// CPU paths (image_resize.cpp, resize_linear_cv.cpp) and the CUDA preprocessing kernels read the same
// tables, so their results are equal byte for byte.
#pragma once

#include <cstdint>
#include <vector>

#include "io/timm_config.h"

namespace kiln {

// PIL: output sample i of an axis is clip8((2^21 + sum_t in[start[i] + t] * weights[i * taps + t]) >> 22)
// over t < length[i]: 22-bit fixed-point weights (32 bits minus 8 for the sample and 2 for the negative
// lobes' overshoot).
inline constexpr int kResamplePrecisionBits = 22;

struct ResampleAxis {
  std::int64_t taps = 0;              // stride of `weights`
  std::vector<std::int32_t> start;    // first input sample per output sample
  std::vector<std::int32_t> length;   // input samples used (0: the output is 0)
  std::vector<std::int32_t> weights;  // count x taps, zero past length
};

// Output samples [first, first + count) of an axis resized from in_size to out_size. Bilinear and
// bicubic widen the filter by the scale when downsampling (antialiasing); nearest takes one sample at
// weight 1. An axis that keeps its size gets weights of exactly one (PIL skips that pass; the result is
// the same).
ResampleAxis resample_axis(std::int64_t in_size, std::int64_t out_size, std::int64_t first,
                           std::int64_t count, Interpolation interpolation);

// The input samples [begin, end) an axis's outputs read (outputs without a source, length 0, read none;
// end == begin when none reads any). `in_size` is the axis's input size.
struct SampleRange {
  std::int64_t begin = 0, end = 0;
};
SampleRange samples_read(const ResampleAxis& axis, std::int64_t in_size);

// A window of a resized image: columns [left, left + width) and rows [top, top + height).
struct CropWindow {
  std::int64_t left = 0;
  std::int64_t top = 0;
  std::int64_t width = 0;
  std::int64_t height = 0;
};

// timm's eval geometry for an image: torchvision's Resize(floor(size / crop_pct)) of the shorter side
// to width x height, then CenterCrop(size) as `window`. Fails naming the bad config value.
struct EvalResize {
  std::int64_t width = 0, height = 0;
  CropWindow window;
};
EvalResize eval_resize_geometry(std::int64_t image_width, std::int64_t image_height,
                                const PreprocessConfig& config);

// OpenCV: destination sample d reads source samples index and index + 1 (clamped to the image) with
// 11-bit weights weight0 and weight1.
inline constexpr int kLinearCoefBits = 11;
struct LinearTap {
  std::int32_t index = 0;
  std::int32_t weight0 = 1 << kLinearCoefBits, weight1 = 0;
};
// Columns clamp at the image's edges (`clamp_edges`: an edge pixel taken whole); rows keep their fraction
// and read the edge row twice, as OpenCV's 8-bit path does.
std::vector<LinearTap> linear_taps(std::int64_t source, std::int64_t destination, bool clamp_edges);

}  // namespace kiln
