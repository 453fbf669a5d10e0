#include "quant/calibration_method.h"

#include <array>
#include <utility>

#include "core/error.h"

namespace kiln {

namespace {

constexpr std::array<std::pair<CalibrationMethod, std::string_view>, 4> kMethodNames = {{
    {CalibrationMethod::kMax, "max"},
    {CalibrationMethod::kPercentile, "percentile"},
    {CalibrationMethod::kEntropy, "entropy"},
    {CalibrationMethod::kMse, "mse"},
}};

}  // namespace

std::string_view calibration_method_name(CalibrationMethod method) {
  for (const auto& [value, name] : kMethodNames) {
    if (value == method) return name;
  }
  fail("unknown calibration method ", static_cast<int>(method));
}

std::optional<CalibrationMethod> calibration_method_from_name(std::string_view name) {
  for (const auto& [value, known] : kMethodNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace kiln
