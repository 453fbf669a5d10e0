// E4M3 fake quantization and exact-amax weight scales (see fake_quant.h).
#include "quant/fake_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

Tensor as_f32(const Tensor& weight, const char* what) {
  require(!weight.empty(), what, ": the weight has no data");
  require(dtype_is_float(weight.dtype()), what, ": expected a float weight, got ",
          dtype_name(weight.dtype()));
  return weight.dtype() == DType::kF32 ? weight : weight.to(DType::kF32);
}

// Elements per output channel, for a weight of rank >= 1.
std::size_t channel_size(const Tensor& weight, const char* what) {
  require(weight.rank() >= 1, what, ": expected a weight of rank >= 1, got shape ",
          shape_str(weight.shape()));
  const std::int64_t channels = weight.dim(0);
  return channels == 0 ? 0 : static_cast<std::size_t>(weight.numel() / channels);
}

float finite_amax(std::span<const float> values, const char* what) {
  float amax = 0.0f;
  for (const float value : values) {
    if (!std::isfinite(value)) fail(what, ": the weight holds ", value, "; expected finite values");
    amax = std::max(amax, std::fabs(value));
  }
  return amax;
}

void check_scale(float scale) {
  require(std::isfinite(scale) && scale > 0.0f, "fake quantization scale ", scale,
          " must be positive and finite");
}

}  // namespace

float scale_for_amax(float amax, QuantFormat format) {
  require(std::isfinite(amax) && amax >= 0.0f, "amax ", amax, " must be finite and >= 0");
  const float top = grid_max(format);
  if (amax == 0.0f) return 1.0f / top;
  return std::max(amax / top, std::numeric_limits<float>::min());
}

std::vector<float> per_channel_weight_scales(const Tensor& weight, QuantFormat format) {
  constexpr const char* kWhat = "per-channel weight scales";
  const Tensor f32 = as_f32(weight, kWhat);
  const std::size_t size = channel_size(f32, kWhat);
  const std::span<const float> values = f32.f32();
  std::vector<float> scales(static_cast<std::size_t>(f32.dim(0)));
  for (std::size_t channel = 0; channel < scales.size(); ++channel) {
    scales[channel] = scale_for_amax(finite_amax(values.subspan(channel * size, size), kWhat), format);
  }
  return scales;
}

float per_tensor_weight_scale(const Tensor& weight, QuantFormat format) {
  constexpr const char* kWhat = "per-tensor weight scale";
  return scale_for_amax(finite_amax(as_f32(weight, kWhat).f32(), kWhat), format);
}

float fake_quantize(float value, float scale) { return fake_quantize_e4m3(value, scale); }

void fake_quantize_inplace(std::span<float> values, float scale) {
  check_scale(scale);
  for (float& value : values) value = fake_quantize(value, scale);
}

Tensor fake_quantize_per_channel(const Tensor& weight, const std::vector<float>& scales) {
  constexpr const char* kWhat = "per-channel fake quantization";
  Tensor result = as_f32(weight, kWhat).clone();
  const std::size_t size = channel_size(result, kWhat);
  require(scales.size() == static_cast<std::size_t>(result.dim(0)), kWhat, ": ", scales.size(),
          " scales for a weight of shape ", shape_str(result.shape()), "; expected one per output channel");
  const std::span<float> values = result.mutable_f32();
  for (std::size_t channel = 0; channel < scales.size(); ++channel) {
    check_scale(scales[channel]);
    fake_quantize_inplace(values.subspan(channel * size, size), scales[channel]);
  }
  return result;
}

}  // namespace kiln
