#include "quant/quant_format.h"

#include <cmath>

#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

std::string_view quant_format_name(QuantFormat format) {
  switch (format) {
    case QuantFormat::kE4M3:
      return "fp8-e4m3";
    case QuantFormat::kInt8:
      return "int8";
  }
  return "unknown";
}

std::optional<QuantFormat> quant_format_from_name(std::string_view name) {
  for (const QuantFormat format : {QuantFormat::kE4M3, QuantFormat::kInt8}) {
    if (quant_format_name(format) == name) return format;
  }
  return std::nullopt;
}

QuantFormat quant_format_of(Precision precision) {
  require(is_quantized(precision), "precision ", precision_name(precision), " is not quantized");
  return precision == Precision::kI8 ? QuantFormat::kInt8 : QuantFormat::kE4M3;
}

Precision precision_of(QuantFormat format) {
  return format == QuantFormat::kInt8 ? Precision::kI8 : Precision::kF8;
}

float grid_max(QuantFormat format) { return format == QuantFormat::kInt8 ? kInt8Max : kE4M3Max; }

float round_to_grid(QuantFormat format, float scaled) {
  if (format == QuantFormat::kE4M3) return round_to_e4m3(scaled);
  return static_cast<float>(quantize_to_int8(scaled, 1.0f));
}

std::vector<float> grid_levels(QuantFormat format) {
  std::vector<float> levels;
  if (format == QuantFormat::kInt8) {
    for (int code = 0; code <= 127; ++code) levels.push_back(static_cast<float>(code));
    return levels;
  }
  constexpr std::uint8_t kTop = 0x7E;  // 448; positive E4M3 codes rise with their value
  for (std::uint8_t code = 0; code <= kTop; ++code) levels.push_back(e4m3_to_f32(code));
  return levels;
}

float fake_quantize_on(QuantFormat format, float value, float scale) {
  return format == QuantFormat::kInt8 ? fake_quantize_int8(value, scale) : fake_quantize_e4m3(value, scale);
}

}  // namespace kiln
