#include "quant/calibration_cache.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"

namespace kiln {

namespace {

std::map<std::string, float> read_scales(const nlohmann::json& json, const std::string& name) {
  const auto format = json.is_object() ? json.find("format") : json.end();
  require(json.is_object() && format != json.end() && format->is_string() &&
              format->get<std::string>() == kCalibrationCacheFormat,
          name, ": expected a calibration cache with \"format\": \"", kCalibrationCacheFormat, "\"");
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

std::map<std::string, float> read_calibration_cache(const std::filesystem::path& path) {
  const std::string name = path.string();
  const nlohmann::json json =
      parse_user_json(read_regular_file(path, kMaxCacheBytes, "a calibration cache"), name);
  return with_json_errors(name, "unexpected JSON value", [&] { return read_scales(json, name); });
}

}  // namespace kiln
