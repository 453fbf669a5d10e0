#include "pipeline/fp8_settings.h"

#include <functional>
#include <memory>

#include "core/error.h"
#include "io/atomic_file.h"
#include "quant/calibration_images.h"
#include "quant/fp8_build.h"
#include "quant/layer_selection.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

namespace {

// Everything but the calibration data: the recipe, calibrator, fallback and auto-search settings.
Fp8Settings fp8_settings(const Fp8Options& options, const QuantizationSettings& defaults) {
  Fp8Settings settings;
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
  const auto fallback = precision_from_name(options.fallback);
  require(fallback.has_value() && *fallback != Precision::kF8, "--fp8-fallback: expected fp16 or fp32, got '",
          options.fallback, "'");
  settings.fallback = *fallback;
  settings.auto_target = parse_auto_target(options.auto_target);
  settings.sensitivity_images = options.sensitivity_images;
  settings.backend = default_backend();
  return settings;
}

using LoadImages = std::function<CalibrationImages(const CalibrationImageOptions&)>;

Fp8Quantization fp8_quantization(const Fp8Options& options, const Manifest& manifest, const Graph& graph,
                                 const LoadImages& load) {
  const bool cached = options.calib_cache && std::filesystem::exists(*options.calib_cache);
  require(options.calib_data.has_value() || cached,
          "fp8 builds calibrate on images: give --calib DATA (or an existing --calib-cache)");
  const QuantizationSettings defaults = manifest.quantization.value_or(QuantizationSettings{});
  require(defaults.activations == QuantGranularity::kPerTensor, manifest.path.string(),
          ": quantization.activations: only per-tensor activation scales are supported");
  Fp8Settings settings = fp8_settings(options, defaults);
  // A bad recipe fails before any image is loaded (the convolutions keep their names through the passes).
  if (settings.recipe != "auto") select_layers(graph, parse_recipe(settings.recipe));
  if (cached) settings.cached_scales = read_calibration_cache(*options.calib_cache);
  auto images = std::make_shared<CalibrationImages>();
  if (options.calib_data && !(cached && settings.recipe != "auto")) {
    CalibrationImageOptions data;
    data.data = *options.calib_data;
    data.images = options.calib_images.value_or(
        defaults.calibration_images > 0 ? static_cast<std::size_t>(defaults.calibration_images) : 500);
    data.every = options.calib_every;
    data.strict = options.strict;
    *images = load(data);
  }
  return {[settings, images](Graph& g) { return quantize_fp8(g, settings, *images); }, settings.fallback};
}

}  // namespace

Fp8Quantization make_fp8_quantization(const Fp8Options& options, const Manifest& manifest, const Graph& graph,
                                      const PreprocessConfig& preprocess) {
  return fp8_quantization(options, manifest, graph, [&](const CalibrationImageOptions& data) {
    return load_calibration_images(data, preprocess);
  });
}

Fp8Quantization make_fp8_quantization(const Fp8Options& options, const Manifest& manifest, const Graph& graph,
                                      const ImageToInput& to_input) {
  return fp8_quantization(options, manifest, graph, [&](const CalibrationImageOptions& data) {
    return load_calibration_images(data, to_input);
  });
}

void keep_calibration_cache(const Fp8Options& options, const Plan& plan) {
  if (!options.calib_cache || std::filesystem::exists(*options.calib_cache)) return;
  if (!plan.info.quantization.contains("calibration_cache")) return;  // not an fp8 build: nothing calibrated
  write_file_atomically(*options.calib_cache, [&](std::ostream& out) {
    out << plan.info.quantization.at("calibration_cache").dump(2) << "\n";
  });
}

}  // namespace kiln::pipeline
