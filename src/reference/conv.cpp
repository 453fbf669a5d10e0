// Direct 2D convolution. For each (image, output channel) a double plane accumulates every
// (input channel, kernel tap) contribution; the innermost loop runs along an output row over the
// columns whose input lies inside the image, so padding never needs a branch per element.
#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {
namespace {

constexpr std::string_view kOp = "conv2d";

void check_attrs(const ConvAttrs& attrs) {
  for (std::size_t i = 0; i < 2; ++i) {
    require(attrs.kernel[i] >= 1, kOp, ": expected kernel extents >= 1, got ", attrs.kernel[i]);
    require(attrs.stride[i] >= 1, kOp, ": expected strides >= 1, got ", attrs.stride[i]);
    require(attrs.dilation[i] >= 1, kOp, ": expected dilations >= 1, got ", attrs.dilation[i]);
  }
  for (const auto pad : attrs.padding) require(pad >= 0, kOp, ": expected padding >= 0, got ", pad);
  require(attrs.groups >= 1, kOp, ": expected groups >= 1, got ", attrs.groups);
}

std::int64_t conv_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                         std::int64_t pad_begin, std::int64_t pad_end) {
  const std::int64_t span = in + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  require(span >= 0, kOp, ": dilated kernel extent ", dilation * (kernel - 1) + 1,
          " is larger than the padded input extent ", in + pad_begin + pad_end);
  return span / stride + 1;
}

// The convolution of x and weight (both f32; their values may be int8 codes) as one double plane per
// (image, output channel), each plane starting at initial(oc) and handed to finish(oc, plane, y_plane).
template <typename Initial, typename Finish>
Tensor convolve(const Tensor& x, const Tensor& weight, const ConvAttrs& attrs, Initial initial,
                Finish finish) {
  detail::require_rank(kOp, "input", x, 4);
  detail::require_rank(kOp, "weight", weight, 4);
  check_attrs(attrs);

  const std::int64_t batch = x.dim(0), in_channels = x.dim(1), in_h = x.dim(2), in_w = x.dim(3);
  const std::int64_t out_channels = weight.dim(0), groups = attrs.groups;
  const auto [kernel_h, kernel_w] = attrs.kernel;
  const auto [stride_h, stride_w] = attrs.stride;
  const auto [dilation_h, dilation_w] = attrs.dilation;
  const auto [pad_top, pad_left, pad_bottom, pad_right] = attrs.padding;

  require(in_channels % groups == 0, kOp, ": input channels ", in_channels, " are not divisible by groups ",
          groups);
  require(out_channels % groups == 0, kOp, ": output channels ", out_channels,
          " are not divisible by groups ", groups);
  const std::int64_t group_in = in_channels / groups, group_out = out_channels / groups;
  const Shape expected_weight{out_channels, group_in, kernel_h, kernel_w};
  require(weight.shape() == expected_weight, kOp, ": expected weight of shape ", shape_str(expected_weight),
          " for input ", shape_str(x.shape()), " with groups ", groups, ", got ", shape_str(weight.shape()));

  const std::int64_t out_h = conv_extent(in_h, kernel_h, stride_h, dilation_h, pad_top, pad_bottom);
  const std::int64_t out_w = conv_extent(in_w, kernel_w, stride_w, dilation_w, pad_left, pad_right);

  Tensor y(DType::kF32, {batch, out_channels, out_h, out_w});
  const auto xs = x.f32();
  const auto ws = weight.f32();
  const auto out = y.mutable_f32();
  std::vector<double> plane(static_cast<std::size_t>(out_h * out_w));

  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t oc = 0; oc < out_channels; ++oc) {
      const std::int64_t group = oc / group_out;
      std::fill(plane.begin(), plane.end(), initial(oc));

      for (std::int64_t gc = 0; gc < group_in; ++gc) {
        const float* x_plane = xs.data() + ((n * in_channels + group * group_in + gc) * in_h) * in_w;
        const float* w_taps = ws.data() + ((oc * group_in + gc) * kernel_h) * kernel_w;
        for (std::int64_t ky = 0; ky < kernel_h; ++ky) {
          for (std::int64_t kx = 0; kx < kernel_w; ++kx) {
            const double w = w_taps[ky * kernel_w + kx];
            // Input column of output column ox is ox * stride_w + col_shift; keep it in [0, in_w).
            const std::int64_t col_shift = kx * dilation_w - pad_left;
            const std::int64_t ox_begin = std::max<std::int64_t>(0, detail::ceil_div(-col_shift, stride_w));
            const std::int64_t ox_end =
                std::min(out_w, detail::floor_div(in_w - 1 - col_shift, stride_w) + 1);
            if (ox_begin >= ox_end) continue;
            for (std::int64_t oy = 0; oy < out_h; ++oy) {
              const std::int64_t iy = oy * stride_h + ky * dilation_h - pad_top;
              if (iy < 0 || iy >= in_h) continue;
              const float* in = x_plane + iy * in_w + ox_begin * stride_w + col_shift;
              double* acc = plane.data() + oy * out_w + ox_begin;
              const std::int64_t count = ox_end - ox_begin;
              if (stride_w == 1) {  // the common case, kept separate so that it vectorizes
                for (std::int64_t i = 0; i < count; ++i) acc[i] += w * in[i];
              } else {
                for (std::int64_t i = 0; i < count; ++i) acc[i] += w * in[i * stride_w];
              }
            }
          }
        }
      }
      finish(oc, plane, out.data() + (n * out_channels + oc) * out_h * out_w);
    }
  }
  return y;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias, const ConvAttrs& attrs) {
  detail::require_rank(kOp, "weight", weight, 4);
  if (bias != nullptr) detail::require_vector(kOp, "bias", *bias, weight.dim(0));
  const auto initial = [&](std::int64_t oc) {
    return bias != nullptr ? static_cast<double>(bias->f32()[oc]) : 0.0;
  };
  return convolve(x, weight, attrs, initial, [&](std::int64_t, const std::vector<double>& plane, float* y) {
    for (std::size_t i = 0; i < plane.size(); ++i)
      y[i] = static_cast<float>(detail::activate(plane[i], attrs.activation));
  });
}

Tensor conv2d_int8(const Tensor& x_codes, std::span<const float> x_scales, const Tensor& weight_codes,
                   const Tensor& weight_scales, const Tensor* bias, const ConvAttrs& attrs) {
  constexpr std::string_view kInt8 = "int8 conv2d";
  detail::require_f32(kInt8, "input codes", x_codes);
  for (const float x_scale : x_scales)
    require(std::isfinite(x_scale) && x_scale > 0.0f, kInt8, ": expected a positive finite input scale, got ",
            x_scale);
  const Tensor w = weight_codes.dtype() == DType::kF32 ? weight_codes : weight_codes.to(DType::kF32);
  detail::require_rank(kInt8, "weight codes", w, 4);
  detail::require_vector(kInt8, "weight scales", weight_scales, w.dim(0));
  if (bias != nullptr) detail::require_vector(kInt8, "bias", *bias, w.dim(0));
  // Per-channel input scales factor out of an output channel's sum only when that channel reads one
  // input channel: a depthwise convolution.
  const bool per_channel = x_scales.size() != 1;
  require(
      !per_channel || (x_codes.rank() == 4 && attrs.groups == x_codes.dim(1) && attrs.groups == w.dim(0) &&
                       static_cast<std::int64_t>(x_scales.size()) == attrs.groups),
      kInt8, ": ", x_scales.size(),
      " input scales need a depthwise convolution with that many channels, got ", "groups ", attrs.groups,
      ", input ", shape_str(x_codes.shape()), ", weight ", shape_str(w.shape()));
  const auto scales = weight_scales.f32();
  // Integer codes: every product and partial sum is an integer below 2^53, so the double planes hold the
  // int32 accumulator exactly, whatever the order.
  return convolve(
      x_codes, w, attrs, [](std::int64_t) { return 0.0; },
      [&](std::int64_t oc, const std::vector<double>& plane, float* y) {
        const float x_scale = x_scales[per_channel ? static_cast<std::size_t>(oc) : 0];
        const double dequantize = static_cast<double>(x_scale) * static_cast<double>(scales[oc]);
        const float b = bias != nullptr ? bias->f32()[oc] : 0.0f;
        for (std::size_t i = 0; i < plane.size(); ++i) {
          const float value = static_cast<float>(plane[i] * dequantize) + b;
          y[i] = static_cast<float>(detail::activate(value, attrs.activation));
        }
      });
}

}  // namespace kiln::reference
