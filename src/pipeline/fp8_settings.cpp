#include "pipeline/fp8_settings.h"

#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/regular_file.h"
#include "data/open_dataset.h"
#include "io/user_json.h"
#include "io/utf8_text.h"
#include "quant/calibration_cache.h"
#include "quant/calibration_images.h"
#include "quant/fp8_build.h"
#include "quant/layer_selection.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

namespace {

// Everything but the calibration data: the recipe, calibrator, fallback and auto-search settings.
Fp8Settings fp8_settings(const Fp8Options& options, Precision precision,
                         const QuantizationSettings& defaults) {
  Fp8Settings settings;
  settings.format = quant_format_of(precision);
  settings.recipe = options.recipe.value_or(defaults.recipe.empty() ? "all" : defaults.recipe);
  settings.method = defaults.calibration;
  if (options.calib_method) {
    const auto method = calibration_method_from_name(*options.calib_method);
    require(method.has_value(), "--calib-method: expected max, percentile, entropy or mse, got '",
            *options.calib_method, "'");
    settings.method = *method;
  }
  settings.calibration.percentile = options.percentile;
  settings.per_channel_weights = defaults.weights == QuantGranularity::kPerChannel;
  const std::string fallback_name = options.fallback.value_or(precision == Precision::kI8 ? "fp32" : "fp16");
  const auto fallback = precision_from_name(fallback_name);
  require(fallback.has_value() && (*fallback == Precision::kF16 || *fallback == Precision::kF32),
          "--fp8-fallback: expected fp16 or fp32, got '", fallback_name, "'");
  settings.fallback = *fallback;
  settings.auto_target = parse_auto_target(options.auto_target);
  settings.sensitivity_images = options.sensitivity_images;
  settings.quantize_residuals = options.quantize_residuals;
  if (options.depthwise_input_scales) {
    const auto scales = depthwise_input_scales_from_name(*options.depthwise_input_scales);
    require(scales.has_value(), "--depthwise-input-scales: expected per-channel or per-tensor, got '",
            *options.depthwise_input_scales, "'");
    require(precision == Precision::kI8,
            "--depthwise-input-scales: only int8 quantizes activations per channel");
    settings.depthwise_input_scales = *scales;
  }
  settings.backend = default_backend();
  return settings;
}

using LoadImages = std::function<CalibrationImages(const CalibrationImageOptions&)>;

CalibrationImageOptions calibration_data(const Fp8Options& options, const QuantizationSettings& defaults) {
  CalibrationImageOptions data;
  data.data = options.calib_data.value_or("");
  data.images = options.calib_images.value_or(
      defaults.calibration_images > 0 ? static_cast<std::size_t>(defaults.calibration_images) : 500);
  data.every = options.calib_every;
  data.strict = options.strict;
  return data;
}

// A cache made by another calibrator, or on other images than --calib selects, is refused naming both;
// a cache from before caches recorded their images is used with a notice.
void check_cache_provenance(const Fp8Options& options, const QuantizationSettings& defaults) {
  const std::filesystem::path& path = *options.calib_cache;
  // Read as read_calibration_cache read it just before, which named anything wrong with it.
  const nlohmann::json cache =
      parse_user_json(read_regular_file(path, kMaxCacheBytes, "a calibration cache"), path.string());
  if (!cache.is_object()) return;
  // read_calibration_cache checked the scales; these two records are optional and read only as strings.
  const auto text = [](const nlohmann::json& object, const char* key) {
    return object.is_object() && object.contains(key) && object[key].is_string()
               ? object[key].get<std::string>()
               : std::string();
  };
  const std::string method = text(cache, "calibration");
  require(!options.calib_method || method.empty() || *options.calib_method == method, path.string(),
          ": --calib-cache was calibrated with ", method, ", but --calib-method ", *options.calib_method,
          " was given: drop --calib-method, or give a new --calib-cache path");
  if (!options.calib_data) return;
  const nlohmann::json data_record = cache.contains("data") ? cache["data"] : nlohmann::json();
  const std::string recorded = text(data_record, "fingerprint");
  if (recorded.empty()) {
    std::cerr
        << "kiln: note: " << path.string()
        << " does not record its calibration images (an older cache): --calib is not checked against it\n";
    return;
  }
  const CalibrationImageOptions data = calibration_data(options, defaults);
  const Dataset dataset = open_dataset(data.data);
  const std::string fingerprint = calibration_fingerprint(dataset, calibration_indices(dataset, data));
  require(fingerprint == recorded, path.string(), ": --calib-cache was calibrated on other images (",
          text(data_record, "data"), ", fingerprint ", recorded.substr(0, 12), ") than --calib ", data.data,
          " selects (fingerprint ", fingerprint.substr(0, 12),
          "): give the same --calib, --images and --every, or a new --calib-cache path");
}

Fp8Quantization fp8_quantization(const Fp8Options& options, Precision precision, const Manifest& manifest,
                                 const Graph& graph, const LoadImages& load) {
  const bool cached = options.calib_cache && std::filesystem::exists(*options.calib_cache);
  require(options.calib_data.has_value() || cached, precision_name(precision),
          " builds calibrate on images: give --calib DATA (or an existing --calib-cache)");
  const QuantizationSettings defaults = manifest.quantization.value_or(QuantizationSettings{});
  require(defaults.activations == QuantGranularity::kPerTensor, manifest.path.string(),
          ": quantization.activations: only per-tensor activation scales are supported");
  Fp8Settings settings = fp8_settings(options, precision, defaults);
  // A bad recipe fails before any image is loaded (the convolutions keep their names through the passes).
  if (settings.recipe != "auto") select_layers(graph, parse_recipe(settings.recipe));
  if (cached) {
    settings.cached_scales = read_calibration_cache(*options.calib_cache, settings.format);
    check_cache_provenance(options, defaults);
  }
  auto images = std::make_shared<CalibrationImages>();
  if (options.calib_data && !(cached && settings.recipe != "auto")) {
    *images = load(calibration_data(options, defaults));
  }
  return {fp8_quantizer(settings, images), settings.fallback};
}

}  // namespace

Fp8Quantization make_fp8_quantization(const Fp8Options& options, Precision precision,
                                      const Manifest& manifest, const Graph& graph,
                                      const PreprocessConfig& preprocess) {
  return fp8_quantization(options, precision, manifest, graph, [&](const CalibrationImageOptions& data) {
    return load_calibration_images(data, preprocess);
  });
}

Fp8Quantization make_fp8_quantization(const Fp8Options& options, Precision precision,
                                      const Manifest& manifest, const Graph& graph,
                                      const ImageToInput& to_input) {
  return fp8_quantization(options, precision, manifest, graph, [&](const CalibrationImageOptions& data) {
    return load_calibration_images(data, to_input);
  });
}

void keep_calibration_cache(const Fp8Options& options, const Plan& plan) {
  if (!options.calib_cache || std::filesystem::exists(*options.calib_cache)) return;
  if (!plan.info.quantization.contains("calibration_cache")) return;  // not quantized: nothing calibrated
  write_json_file(*options.calib_cache, plan.info.quantization.at("calibration_cache"));
}

}  // namespace kiln::pipeline
