// Resizing of 8-bit RGB images that reproduces PIL's Image.resize bit for bit, because timm's eval
// transform runs through it and a classifier's top-1 can flip on a one-level pixel difference.
//
// Bilinear and bicubic (a = -0.5) are separable convolutions: a horizontal pass, then a vertical
// pass, each rounded and clipped to uint8; a pass whose axis keeps its size is skipped. Downscaling
// widens the filter by the scale factor (antialiasing). The weights (resample_tables.h) are 22-bit
// fixed point, accumulated in int32 starting from one half. Nearest is the same passes with one tap.
//
// Only the requested window of the output is computed: output samples do not depend on each other.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "io/resample_tables.h"

namespace kiln {
namespace {

constexpr std::int32_t kHalf = std::int32_t{1} << (kResamplePrecisionBits - 1);

std::uint8_t clip8(std::int32_t accumulator) {
  return static_cast<std::uint8_t>(std::clamp(accumulator >> kResamplePrecisionBits, 0, 255));
}

// Rows [row_begin, row_end) of `image`, resampled horizontally to the window's columns.
Image horizontal_pass(const Image& image, std::int64_t row_begin, std::int64_t row_end,
                      const ResampleAxis& axis) {
  const std::int64_t out_width = static_cast<std::int64_t>(axis.start.size());
  Image out;
  out.width = out_width;
  out.height = row_end - row_begin;
  out.rgb.resize(static_cast<std::size_t>(out.width * out.height * 3));
  for (std::int64_t y = row_begin; y < row_end; ++y) {
    const std::uint8_t* in = image.rgb.data() + y * image.width * 3;
    std::uint8_t* dst = out.rgb.data() + (y - row_begin) * out_width * 3;
    for (std::int64_t x = 0; x < out_width; ++x) {
      const std::int32_t* k = &axis.weights[static_cast<std::size_t>(x * axis.taps)];
      const std::uint8_t* src = in + axis.start[static_cast<std::size_t>(x)] * 3;
      std::int32_t r = kHalf, g = kHalf, b = kHalf;
      for (std::int64_t t = 0; t < axis.length[static_cast<std::size_t>(x)]; ++t) {
        r += src[3 * t] * k[t];
        g += src[3 * t + 1] * k[t];
        b += src[3 * t + 2] * k[t];
      }
      dst[3 * x] = clip8(r);
      dst[3 * x + 1] = clip8(g);
      dst[3 * x + 2] = clip8(b);
    }
  }
  return out;
}

// Vertical resampling of `image`, whose row 0 is source row `row_offset` of the axis.
Image vertical_pass(const Image& image, std::int64_t row_offset, const ResampleAxis& axis) {
  const std::int64_t out_height = static_cast<std::int64_t>(axis.start.size());
  const std::size_t row_values = static_cast<std::size_t>(image.width * 3);
  Image out;
  out.width = image.width;
  out.height = out_height;
  out.rgb.resize(row_values * static_cast<std::size_t>(out_height));
  std::vector<std::int32_t> acc(row_values);
  for (std::int64_t y = 0; y < out_height; ++y) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const std::int32_t* k = &axis.weights[static_cast<std::size_t>(y * axis.taps)];
    const std::int64_t first_row = axis.start[static_cast<std::size_t>(y)] - row_offset;
    for (std::int64_t t = 0; t < axis.length[static_cast<std::size_t>(y)]; ++t) {
      const std::uint8_t* src = image.rgb.data() + static_cast<std::size_t>(first_row + t) * row_values;
      for (std::size_t v = 0; v < row_values; ++v) acc[v] += src[v] * k[t];
    }
    std::uint8_t* dst = out.rgb.data() + static_cast<std::size_t>(y) * row_values;
    for (std::size_t v = 0; v < row_values; ++v) dst[v] = clip8(acc[v]);
  }
  return out;
}

// Columns [left, left + width) and rows [top, top + height) of `image`.
Image crop(const Image& image, const CropWindow& window) {
  Image out;
  out.width = window.width;
  out.height = window.height;
  out.rgb.resize(static_cast<std::size_t>(window.width * window.height * 3));
  for (std::int64_t y = 0; y < window.height; ++y) {
    const std::uint8_t* src = image.rgb.data() + ((window.top + y) * image.width + window.left) * 3;
    std::copy(src, src + window.width * 3, out.rgb.data() + y * window.width * 3);
  }
  return out;
}

}  // namespace

Image resize_crop(const Image& image, std::int64_t width, std::int64_t height, Interpolation interpolation,
                  const CropWindow& window) {
  require(image.width > 0 && image.height > 0 &&
              image.rgb.size() == static_cast<std::size_t>(image.width * image.height * 3),
          "resize: expected a non-empty RGB image, got ", image.width, "x", image.height, " with ",
          image.rgb.size(), " bytes");
  require(width > 0 && height > 0, "resize: expected a positive output size, got ", width, "x", height);
  require(window.left >= 0 && window.top >= 0 && window.width > 0 && window.height > 0 &&
              window.left + window.width <= width && window.top + window.height <= height,
          "resize: crop window ", window.width, "x", window.height, "+", window.left, "+", window.top,
          " is not inside ", width, "x", height);

  if (width == image.width && height == image.height) return crop(image, window);
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;

  if (!vertical) {
    const ResampleAxis columns = resample_axis(image.width, width, window.left, window.width, interpolation);
    return horizontal_pass(image, window.top, window.top + window.height, columns);
  }
  const ResampleAxis rows = resample_axis(image.height, height, window.top, window.height, interpolation);
  // Source rows the vertical pass reads.
  const auto [row_begin, row_end] = samples_read(rows, image.height);
  if (!horizontal) {
    const Image columns = crop(image, CropWindow{window.left, row_begin, window.width, row_end - row_begin});
    return vertical_pass(columns, row_begin, rows);
  }
  const ResampleAxis columns = resample_axis(image.width, width, window.left, window.width, interpolation);
  return vertical_pass(horizontal_pass(image, row_begin, row_end, columns), row_begin, rows);
}

Image resize_image(const Image& image, std::int64_t width, std::int64_t height, Interpolation interpolation) {
  return resize_crop(image, width, height, interpolation, CropWindow{0, 0, width, height});
}

}  // namespace kiln
