// The activation calibrators by name, on their own so that settings (a manifest's [quantization]
// section, a study's variants) can name one without the calibration code (quant/calibrator.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class CalibrationMethod : std::uint8_t {
  kMax,         // the exact amax
  kPercentile,  // the given percentile of |x|
  kEntropy,     // minimum KL divergence between the histogram and its E4M3 fake-quantized form
  kMse,         // minimum squared error of E4M3 fake quantization over the histogram
};
std::string_view calibration_method_name(CalibrationMethod method);  // "max", "percentile", "entropy", "mse"
std::optional<CalibrationMethod> calibration_method_from_name(std::string_view name);

}  // namespace kiln
