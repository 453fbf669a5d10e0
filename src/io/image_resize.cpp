// Resizing of 8-bit RGB images that reproduces PIL's Image.resize bit for bit, because timm's eval
// transform runs through it and a classifier's top-1 can flip on a one-level pixel difference.
//
// Bilinear and bicubic (a = -0.5) are separable convolutions: a horizontal pass, then a vertical
// pass, each rounded and clipped to uint8; a pass whose axis keeps its size is skipped. Downscaling
// widens the filter by the scale factor (antialiasing). Each output sample's weights are normalised
// to sum 1 in double precision, then turned into 22-bit fixed point (32 bits minus 8 for the
// sample and 2 for overshoot of the negative lobes), accumulated in int32 starting from one half.
// Nearest takes the source pixel under each output pixel's centre, stepping through the source by
// repeated addition of the scale, as PIL's affine scaler does.
//
// Only the requested window of the output is computed: output samples do not depend on each other.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "io/image.h"

namespace kiln {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);

double triangle_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic convolution with a = -0.5, evaluated in the same operation order as PIL.
double cubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct Filter {
  double (*weight)(double);
  double support;  // half-width at scale 1
};

// Fixed-point weights of output samples [first, first + count) along one axis.
struct AxisWeights {
  std::int64_t taps = 0;             // stride of `weights`
  std::vector<std::int64_t> start;   // first input sample per output sample
  std::vector<std::int64_t> length;  // number of input samples used
  std::vector<std::int32_t> weights;
};

AxisWeights axis_weights(std::int64_t in_size, std::int64_t out_size, std::int64_t first, std::int64_t count,
                         const Filter& filter) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter.support * filter_scale;
  const double inv_filter_scale = 1.0 / filter_scale;

  AxisWeights axis;
  axis.taps = static_cast<std::int64_t>(std::ceil(support)) * 2 + 1;
  axis.start.resize(static_cast<std::size_t>(count));
  axis.length.resize(static_cast<std::size_t>(count));
  axis.weights.assign(static_cast<std::size_t>(count * axis.taps), 0);
  std::vector<double> w(static_cast<std::size_t>(axis.taps));
  for (std::int64_t i = 0; i < count; ++i) {
    const double center = (static_cast<double>(first + i) + 0.5) * scale;
    // Bounds are rounded by adding one half and truncating toward zero, then clamped.
    const std::int64_t lo = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    const std::int64_t hi =
        std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in_size);
    const std::int64_t n = hi - lo;
    double total = 0.0;
    for (std::int64_t t = 0; t < n; ++t) {
      const double offset = static_cast<double>(lo + t) - center + 0.5;
      w[static_cast<std::size_t>(t)] = filter.weight(offset * inv_filter_scale);
      total += w[static_cast<std::size_t>(t)];
    }
    std::int32_t* fixed = &axis.weights[static_cast<std::size_t>(i * axis.taps)];
    for (std::int64_t t = 0; t < n; ++t) {
      double k = w[static_cast<std::size_t>(t)];
      if (total != 0.0) k /= total;
      const double scaled = k * static_cast<double>(1 << kPrecisionBits);
      fixed[t] = static_cast<std::int32_t>(k < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    axis.start[static_cast<std::size_t>(i)] = lo;
    axis.length[static_cast<std::size_t>(i)] = n;
  }
  return axis;
}

std::uint8_t clip8(std::int32_t accumulator) {
  return static_cast<std::uint8_t>(std::clamp(accumulator >> kPrecisionBits, 0, 255));
}

// Rows [row_begin, row_end) of `image`, resampled horizontally to the window's columns.
Image horizontal_pass(const Image& image, std::int64_t row_begin, std::int64_t row_end,
                      const AxisWeights& axis) {
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
Image vertical_pass(const Image& image, std::int64_t row_offset, const AxisWeights& axis) {
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

// Source index for each output index below `end`, or -1 where the source would be outside the
// image (PIL fills those with zeros; it does not happen for a plain resize).
std::vector<std::int64_t> nearest_indices(std::int64_t in_size, std::int64_t out_size, std::int64_t end) {
  const double step = static_cast<double>(in_size) / static_cast<double>(out_size);
  std::vector<std::int64_t> index(static_cast<std::size_t>(end));
  double position = step * 0.5;
  for (std::int64_t i = 0; i < end; ++i) {
    // Accumulated, not multiplied, so that rounding matches PIL at exact half-way positions.
    const std::int64_t source = position < 0.0 ? -1 : static_cast<std::int64_t>(position);
    index[static_cast<std::size_t>(i)] = source < in_size ? source : -1;
    position += step;
  }
  return index;
}

Image nearest_resize_crop(const Image& image, std::int64_t width, std::int64_t height,
                          const CropWindow& window) {
  const std::vector<std::int64_t> xs = nearest_indices(image.width, width, window.left + window.width);
  const std::vector<std::int64_t> ys = nearest_indices(image.height, height, window.top + window.height);
  Image out;
  out.width = window.width;
  out.height = window.height;
  out.rgb.assign(static_cast<std::size_t>(window.width * window.height * 3), 0);
  for (std::int64_t y = 0; y < window.height; ++y) {
    const std::int64_t sy = ys[static_cast<std::size_t>(window.top + y)];
    if (sy < 0) continue;
    const std::uint8_t* in = image.rgb.data() + sy * image.width * 3;
    std::uint8_t* dst = out.rgb.data() + y * window.width * 3;
    for (std::int64_t x = 0; x < window.width; ++x) {
      const std::int64_t sx = xs[static_cast<std::size_t>(window.left + x)];
      if (sx < 0) continue;
      std::copy(in + sx * 3, in + sx * 3 + 3, dst + x * 3);
    }
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
  if (interpolation == Interpolation::kNearest) return nearest_resize_crop(image, width, height, window);

  const Filter filter =
      interpolation == Interpolation::kBicubic ? Filter{cubic_filter, 2.0} : Filter{triangle_filter, 1.0};
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;

  if (!vertical) {
    const AxisWeights columns = axis_weights(image.width, width, window.left, window.width, filter);
    return horizontal_pass(image, window.top, window.top + window.height, columns);
  }
  const AxisWeights rows = axis_weights(image.height, height, window.top, window.height, filter);
  // Source rows the vertical pass reads; bounds grow with the output index.
  const std::int64_t row_begin = rows.start.front();
  const std::int64_t row_end = rows.start.back() + rows.length.back();
  if (!horizontal) {
    const Image columns = crop(image, CropWindow{window.left, row_begin, window.width, row_end - row_begin});
    return vertical_pass(columns, row_begin, rows);
  }
  const AxisWeights columns = axis_weights(image.width, width, window.left, window.width, filter);
  return vertical_pass(horizontal_pass(image, row_begin, row_end, columns), row_begin, rows);
}

Image resize_image(const Image& image, std::int64_t width, std::int64_t height, Interpolation interpolation) {
  return resize_crop(image, width, height, interpolation, CropWindow{0, 0, width, height});
}

}  // namespace kiln
