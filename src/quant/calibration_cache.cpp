#include "quant/calibration_cache.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"

namespace kiln {

namespace {

void require_grid(const nlohmann::json& json, const std::string& name, QuantFormat grid) {
  const auto field = json.find("grid");
  if (field == json.end()) {
    require(grid == QuantFormat::kE4M3, name, ": the calibration cache records no grid, so it holds E4M3 ",
            "scales; an ", quant_format_name(grid), " build needs its own: give a new --calib-cache path");
    return;
  }
  require(field->is_string() && quant_format_from_name(field->get<std::string>()).has_value(), name,
          ": key 'grid' must be \"fp8-e4m3\" or \"int8\"");
  const QuantFormat recorded = *quant_format_from_name(field->get<std::string>());
  require(recorded == grid, name, ": the calibration cache holds ", quant_format_name(recorded),
          " scales and this build is ", quant_format_name(grid), ": give a new --calib-cache path");
}

std::map<std::string, float> read_scales(const nlohmann::json& json, const std::string& name,
                                         QuantFormat grid) {
  const auto format = json.is_object() ? json.find("format") : json.end();
  require(json.is_object() && format != json.end() && format->is_string() &&
              format->get<std::string>() == kCalibrationCacheFormat,
          name, ": expected a calibration cache with \"format\": \"", kCalibrationCacheFormat, "\"");
  require_grid(json, name, grid);
  const auto scales_field = json.find("scales");
  require(scales_field != json.end() && scales_field->is_object(), name, ": key 'scales' must be an object");
  std::map<std::string, float> scales;
  for (const auto& [tensor, value] : scales_field->items()) {
    require(value.is_number(), name, ": scales.", tensor, " must be a number");
    const double scale = value.get<double>();
    require(std::isfinite(scale) && scale > 0.0 && scale <= std::numeric_limits<float>::max(), name,
            ": scales.", tensor, " = ", scale, "; expected a positive finite scale");
    scales[tensor] = static_cast<float>(scale);
  }
  return scales;
}

}  // namespace

std::map<std::string, float> read_calibration_cache(const std::filesystem::path& path, QuantFormat grid) {
  const std::string name = path.string();
  const nlohmann::json json =
      parse_user_json(read_regular_file(path, kMaxCacheBytes, "a calibration cache"), name);
  return with_json_errors(name, "unexpected JSON value", [&] { return read_scales(json, name, grid); });
}

}  // namespace kiln
