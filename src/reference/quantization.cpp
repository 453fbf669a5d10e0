// Quantization points: per-tensor fake quantization of activations (E4M3 or int8) and per-output-channel
// dequantization of E4M3 or int8 weight codes.
#include <cmath>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {

namespace {

void require_scale(std::string_view op, float scale) {
  require(std::isfinite(scale) && scale > 0.0f, op, ": expected a positive finite scale, got ", scale);
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

Tensor quantize(const Tensor& x, float scale, bool int8) {
  detail::require_f32("quantize", "input", x);
  require_scale("quantize", scale);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::size_t i = 0; i < xs.size(); ++i)
    out[i] = int8 ? fake_quantize_int8(xs[i], scale) : fake_quantize_e4m3(xs[i], scale);
  return y;
}

Tensor int8_codes_of(const Tensor& quantized, float scale) {
  detail::require_f32("int8 codes", "input", quantized);
  require_scale("int8 codes", scale);
  // quantized = code * scale rounded once in f32; times the f32 reciprocal it stays within 2^-21 of the
  // code, far inside the half step that rounding forgives.
  const float inverse = 1.0f / scale;
  Tensor codes(DType::kF32, quantized.shape());
  const auto in = quantized.f32();
  const auto out = codes.mutable_f32();
  for (std::size_t i = 0; i < in.size(); ++i)
    out[i] = std::isnan(in[i]) ? in[i] : static_cast<float>(quantize_to_int8(in[i], inverse));
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
