#include "io/resample_tables.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln {
namespace {

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

// PIL's convolution weights: each output sample's normalised to sum 1 in double precision, then rounded
// to fixed point half away from zero.
ResampleAxis filter_axis(std::int64_t in_size, std::int64_t out_size, std::int64_t first, std::int64_t count,
                         const Filter& filter) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter.support * filter_scale;
  const double inv_filter_scale = 1.0 / filter_scale;

  ResampleAxis axis;
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
      const double scaled = k * static_cast<double>(1 << kResamplePrecisionBits);
      fixed[t] = static_cast<std::int32_t>(k < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    axis.start[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(lo);
    axis.length[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(n);
  }
  return axis;
}

// PIL's nearest: the source sample under each output sample's centre, stepping through the source by
// repeated addition of the scale (not multiplication, so that rounding matches PIL at exact halves).
// A source outside the image reads as 0 (length 0; it does not happen for a plain resize).
ResampleAxis nearest_axis(std::int64_t in_size, std::int64_t out_size, std::int64_t first,
                          std::int64_t count) {
  const double step = static_cast<double>(in_size) / static_cast<double>(out_size);
  ResampleAxis axis;
  axis.taps = 1;
  axis.start.assign(static_cast<std::size_t>(count), 0);
  axis.length.assign(static_cast<std::size_t>(count), 0);
  axis.weights.assign(static_cast<std::size_t>(count), 0);
  double position = step * 0.5;
  for (std::int64_t i = 0; i < first + count; ++i, position += step) {
    if (i < first) continue;
    const std::int64_t source = position < 0.0 ? -1 : static_cast<std::int64_t>(position);
    if (source < 0 || source >= in_size) continue;
    const auto at = static_cast<std::size_t>(i - first);
    axis.start[at] = static_cast<std::int32_t>(source);
    axis.length[at] = 1;
    axis.weights[at] = std::int32_t{1} << kResamplePrecisionBits;
  }
  return axis;
}

// Python's round() of diff / 2: halves go to the even neighbour (torchvision's center_crop offsets).
std::int64_t half_round_even(std::int64_t diff) {
  const std::int64_t down = diff / 2;
  if (diff % 2 == 0) return down;
  return down % 2 == 0 ? down : down + 1;
}

void check_config(const PreprocessConfig& config) {
  require(config.input_size > 0, "preprocess: input_size must be positive, got ", config.input_size);
  require(config.crop_pct > 0.0 && config.crop_pct <= 1.0, "preprocess: crop_pct must be in (0, 1], got ",
          config.crop_pct);
  require(config.crop_mode == "center", "preprocess: unsupported crop_mode '", config.crop_mode,
          "' (only 'center' is supported)");
  for (int c = 0; c < 3; ++c) require(config.std[c] != 0.0f, "preprocess: std[", c, "] is zero");
}

// saturate_cast<short>(weight * 2^11): rounded half to even, as cvRound rounds.
std::int32_t linear_fixed_point(float weight) {
  return static_cast<std::int32_t>(std::nearbyint(weight * static_cast<float>(1 << kLinearCoefBits)));
}

}  // namespace

ResampleAxis resample_axis(std::int64_t in_size, std::int64_t out_size, std::int64_t first,
                           std::int64_t count, Interpolation interpolation) {
  require(in_size > 0 && out_size > 0 && first >= 0 && count > 0 && first + count <= out_size,
          "resample: samples [", first, ", ", first + count, ") of an axis resized from ", in_size, " to ",
          out_size);
  switch (interpolation) {
    case Interpolation::kNearest:
      return nearest_axis(in_size, out_size, first, count);
    case Interpolation::kBicubic:
      return filter_axis(in_size, out_size, first, count, Filter{cubic_filter, 2.0});
    case Interpolation::kBilinear:
      break;
  }
  return filter_axis(in_size, out_size, first, count, Filter{triangle_filter, 1.0});
}

SampleRange samples_read(const ResampleAxis& axis, std::int64_t in_size) {
  SampleRange range{in_size, 0};
  for (std::size_t i = 0; i < axis.start.size(); ++i) {
    if (axis.length[i] == 0) continue;
    range.begin = std::min<std::int64_t>(range.begin, axis.start[i]);
    range.end = std::max<std::int64_t>(range.end, axis.start[i] + axis.length[i]);
  }
  range.end = std::max(range.end, range.begin);
  return range;
}

EvalResize eval_resize_geometry(std::int64_t image_width, std::int64_t image_height,
                                const PreprocessConfig& config) {
  check_config(config);
  require(image_width > 0 && image_height > 0, "preprocess: empty image");
  const std::int64_t size = config.input_size;
  // math.floor(size / crop_pct) in double, as timm computes it.
  const auto scale_size = static_cast<std::int64_t>(std::floor(static_cast<double>(size) / config.crop_pct));
  // torchvision Resize(int): the shorter side becomes scale_size, the longer one
  // int(scale_size * long / short), truncated.
  const bool portrait = image_width <= image_height;
  const std::int64_t short_side = portrait ? image_width : image_height;
  const std::int64_t long_side = portrait ? image_height : image_width;
  const auto new_long = static_cast<std::int64_t>(static_cast<double>(scale_size * long_side) /
                                                  static_cast<double>(short_side));
  EvalResize geometry;
  geometry.width = portrait ? scale_size : new_long;
  geometry.height = portrait ? new_long : scale_size;
  // crop_pct <= 1 makes both sides at least `size`, so CenterCrop never pads.
  require(geometry.width >= size && geometry.height >= size, "preprocess: resized image ", geometry.width,
          "x", geometry.height, " is smaller than the crop ", size);
  geometry.window = {half_round_even(geometry.width - size), half_round_even(geometry.height - size), size,
                     size};
  return geometry;
}

std::vector<LinearTap> linear_taps(std::int64_t source, std::int64_t destination, bool clamp_edges) {
  require(source > 0 && destination > 0, "resize: empty image or size");
  // OpenCV maps each centre back in double, rounds it to float and splits it into floor and fraction.
  const double scale = 1.0 / (static_cast<double>(destination) / static_cast<double>(source));
  std::vector<LinearTap> result(static_cast<std::size_t>(destination));
  for (std::int64_t d = 0; d < destination; ++d) {
    auto f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
    auto s = static_cast<std::int64_t>(std::floor(f));
    f -= static_cast<float>(s);
    if (clamp_edges && s < 0) {
      s = 0;
      f = 0;
    }
    if (clamp_edges && s >= source - 1) {
      s = source - 1;
      f = 0;
    }
    LinearTap& tap = result[static_cast<std::size_t>(d)];
    tap.index = static_cast<std::int32_t>(s);
    tap.weight0 = linear_fixed_point(1.0f - f);
    tap.weight1 = linear_fixed_point(f);
  }
  return result;
}

}  // namespace kiln
