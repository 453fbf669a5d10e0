// FP8 quantization points: per-tensor fake quantization of activations and per-output-channel
// dequantization of E4M3 weight codes.
#include "backends/cpu/reference/checks.h"
#include "backends/cpu/reference/kernels.h"

namespace kiln::reference {

Tensor quantize(const Tensor& x, float scale) {
  detail::require_f32("quantize", "input", x);
  require(std::isfinite(scale) && scale > 0.0f, "quantize: expected a positive finite scale, got ", scale);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::size_t i = 0; i < xs.size(); ++i) out[i] = fake_quantize_e4m3(xs[i], scale);
  return y;
}

Tensor dequantize(const Tensor& codes, const Tensor& scales) {
  constexpr std::string_view kOp = "dequantize";
  require(!codes.empty() && codes.rank() >= 1, kOp, ": expected codes of rank >= 1");
  detail::require_vector(kOp, "scales", scales, codes.dim(0));
  // Codes arrive as E4M3 from a plan, or widened to f32 for execution; either way they must lie on
  // the E4M3 grid, or the plan was not made by a quantizer.
  const Tensor values = codes.dtype() == DType::kF32 ? codes : codes.to(DType::kF32);
  require(codes.dtype() == DType::kF32 || codes.dtype() == DType::kF8E4M3, kOp, ": expected e4m3 codes, got ",
          dtype_name(codes.dtype()));
  Tensor y(DType::kF32, codes.shape());
  const auto in = values.f32();
  const auto out = y.mutable_f32();
  const auto per_channel = static_cast<std::size_t>(codes.numel() / std::max<std::int64_t>(codes.dim(0), 1));
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (round_to_e4m3(in[i]) != in[i]) fail(kOp, ": code ", in[i], " at index ", i, " is not an E4M3 value");
    out[i] = in[i] * scales.f32()[i / per_channel];
  }
  return y;
}

}  // namespace kiln::reference
