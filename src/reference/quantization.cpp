// Quantization points: fake quantization of activations (E4M3 or int8; int8 per tensor or per channel) and
// per-output-channel dequantization of E4M3 or int8 weight codes.
#include <cmath>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {

namespace {

void require_scale(std::string_view op, float scale) {
  require(std::isfinite(scale) && scale > 0.0f, op, ": expected a positive finite scale, got ", scale);
}

// The scale, or one positive finite scale per channel of x (axis 1).
void require_scales(std::string_view op, const Tensor& x, const QuantizeAttrs& attrs) {
  require_scale(op, attrs.scale);
  if (!attrs.per_channel()) return;
  require(attrs.int8, op, ": per-channel scales are for int8 only");
  require(x.rank() >= 2 && static_cast<std::size_t>(x.dim(1)) == attrs.channel_scales.size(), op, ": ",
          attrs.channel_scales.size(), " channel scales for an input of shape ", shape_str(x.shape()));
  for (const float scale : attrs.channel_scales) require_scale(op, scale);
}

// Elements per channel of one image: the product of the axes after the channel axis (1).
std::size_t channel_plane(const Tensor& x) {
  std::size_t plane = 1;
  for (std::size_t axis = 2; axis < x.rank(); ++axis) plane *= static_cast<std::size_t>(x.dim(axis));
  return plane;
}

// The channel of element i of a tensor laid out [N, C, plane] (0 when attrs has one scale).
std::size_t channel_of(std::size_t i, std::size_t plane, const QuantizeAttrs& attrs) {
  return attrs.per_channel() ? (i / plane) % attrs.channel_scales.size() : 0;
}

bool is_int8_code(float value) {
  return std::nearbyint(value) == value && value >= -128.0f && value <= 127.0f;
}

// Codes arrive as E4M3 or I8 from a plan, or widened to f32 for execution; either way they must lie on a
// quantizer's grid, or the plan was not made by a quantizer. Widened codes do not say their grid, so an f32
// code may lie on either.
bool is_code(float value, DType dtype) {
  const bool e4m3 = round_to_e4m3(value) == value;
  if (dtype == DType::kI8) return is_int8_code(value);
  if (dtype == DType::kF8E4M3) return e4m3;
  return e4m3 || is_int8_code(value);
}

}  // namespace

Tensor quantize(const Tensor& x, const QuantizeAttrs& attrs) {
  detail::require_f32("quantize", "input", x);
  require_scales("quantize", x, attrs);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  const std::size_t plane = channel_plane(x);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const float scale = attrs.scale_of(channel_of(i, plane, attrs));
    out[i] = attrs.int8 ? fake_quantize_int8(xs[i], scale) : fake_quantize_e4m3(xs[i], scale);
  }
  return y;
}

Tensor int8_codes_of(const Tensor& quantized, const QuantizeAttrs& attrs) {
  detail::require_f32("int8 codes", "input", quantized);
  require_scales("int8 codes", quantized, attrs);
  // quantized = code * scale rounded once in f32; times the f32 reciprocal it stays within 2^-21 of the
  // code, far inside the half step that rounding forgives.
  Tensor codes(DType::kF32, quantized.shape());
  const auto in = quantized.f32();
  const auto out = codes.mutable_f32();
  const std::size_t plane = channel_plane(quantized);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float inverse = 1.0f / attrs.scale_of(channel_of(i, plane, attrs));
    out[i] = std::isnan(in[i]) ? in[i] : static_cast<float>(quantize_to_int8(in[i], inverse));
  }
  return codes;
}

Tensor dequantize(const Tensor& codes, const Tensor& scales) {
  constexpr std::string_view kOp = "dequantize";
  require(!codes.empty() && codes.rank() >= 1, kOp, ": expected codes of rank >= 1");
  detail::require_vector(kOp, "scales", scales, codes.dim(0));
  require(codes.dtype() == DType::kF32 || codes.dtype() == DType::kF8E4M3 || codes.dtype() == DType::kI8, kOp,
          ": expected e4m3 or i8 codes, got ", dtype_name(codes.dtype()));
  const Tensor values = codes.dtype() == DType::kF32 ? codes : codes.to(DType::kF32);
  Tensor y(DType::kF32, codes.shape());
  const auto in = values.f32();
  const auto out = y.mutable_f32();
  const auto per_channel = static_cast<std::size_t>(codes.numel() / std::max<std::int64_t>(codes.dim(0), 1));
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!is_code(in[i], codes.dtype()))
      fail(kOp, ": code ", in[i], " at index ", i, " is not an E4M3 or int8 value");
    out[i] = in[i] * scales.f32()[i / per_channel];
  }
  return y;
}

}  // namespace kiln::reference
