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

float read_scale(const nlohmann::json& value, const std::string& name, const std::string& key) {
  require(value.is_number(), name, ": ", key, " must be a number");
  const double scale = value.get<double>();
  require(std::isfinite(scale) && scale > 0.0 && scale <= std::numeric_limits<float>::max(), name, ": ", key,
          " = ", scale, "; expected a positive finite scale");
  return static_cast<float>(scale);
}

// "channel_scales": {TENSOR: [SCALE, ...]}, optional; int8 caches only.
void read_channel_scales(const nlohmann::json& json, const std::string& name, QuantFormat grid,
                         ActivationScales& scales) {
  const auto field = json.find("channel_scales");
  if (field == json.end()) return;
  require(field->is_object(), name, ": key 'channel_scales' must be an object");
  require(field->empty() || grid == QuantFormat::kInt8, name,
          ": channel_scales in an fp8-e4m3 cache; only int8 quantizes activations per channel");
  for (const auto& [tensor, list] : field->items()) {
    const std::string key = "channel_scales." + tensor;
    require(list.is_array() && !list.empty(), name, ": ", key, " must be a non-empty list of scales");
    require(!scales.tensors.contains(tensor), name, ": '", tensor,
            "' has both one scale (scales) and one per channel (channel_scales)");
    std::vector<float>& channels = scales.channels[tensor];
    for (std::size_t c = 0; c < list.size(); ++c)
      channels.push_back(read_scale(list[c], name, cat(key, "[", c, "]")));
  }
}

ActivationScales read_scales(const nlohmann::json& json, const std::string& name, QuantFormat grid) {
  const auto format = json.is_object() ? json.find("format") : json.end();
  require(json.is_object() && format != json.end() && format->is_string() &&
              format->get<std::string>() == kCalibrationCacheFormat,
          name, ": expected a calibration cache with \"format\": \"", kCalibrationCacheFormat, "\"");
  require_grid(json, name, grid);
  const auto scales_field = json.find("scales");
  require(scales_field != json.end() && scales_field->is_object(), name, ": key 'scales' must be an object");
  ActivationScales scales;
  for (const auto& [tensor, value] : scales_field->items())
    scales.tensors[tensor] = read_scale(value, name, "scales." + tensor);
  read_channel_scales(json, name, grid, scales);
  return scales;
}

}  // namespace

ActivationScales read_calibration_cache(const std::filesystem::path& path, QuantFormat grid) {
  const std::string name = path.string();
  const nlohmann::json json =
      parse_user_json(read_regular_file(path, kMaxCacheBytes, "a calibration cache"), name);
  return with_json_errors(name, "unexpected JSON value", [&] { return read_scales(json, name, grid); });
}

}  // namespace kiln
