#include "quant/input_scales.h"

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "core/progress.h"
#include "quant/activation_calibration.h"
#include "quant/fp8_build.h"
#include "quant/shared_calibration.h"

namespace kiln {

namespace {

bool contains(const std::vector<ValueId>& values, ValueId value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The cache's scales for a tensor the build quantizes per channel: one per channel of it.
std::vector<float> cached_channel_scales(const Value& tensor, const ActivationScales& cache) {
  const auto channels = cache.channels.find(tensor.name);
  require(channels != cache.channels.end() || !cache.tensors.contains(tensor.name),
          "the calibration cache holds one scale for '", tensor.name,
          "', which this int8 build quantizes per channel (only depthwise convolutions read it): give a "
          "new --calib-cache path, or --depthwise-input-scales per-tensor");
  require(channels != cache.channels.end(), "the calibration cache has no scales for '", tensor.name, "'");
  const std::int64_t count = tensor.shape.size() == 4 ? tensor.shape[1] : 0;
  require(static_cast<std::int64_t>(channels->second.size()) == count, "the calibration cache holds ",
          channels->second.size(), " channel scales for '", tensor.name, "', which has ", count,
          " channels: give a new --calib-cache path");
  return channels->second;
}

nlohmann::json channel_report(const std::vector<float>& scales) {
  const auto [low, high] = std::minmax_element(scales.begin(), scales.end());
  return {{"channels", scales.size()}, {"scale", *high}, {"scale_min", *low}};
}

}  // namespace

InputScales cached_input_scales(const Graph& graph, const std::vector<ValueId>& inputs,
                                const std::vector<ValueId>& per_channel, const ActivationScales& cache) {
  InputScales out;
  for (const ValueId value : inputs) {
    const Value& tensor = graph.value(value);
    if (contains(per_channel, value)) {
      std::vector<float> scales = cached_channel_scales(tensor, cache);
      out.tensors[tensor.name] = channel_report(scales);
      out.tensors[tensor.name]["from"] = "calibration cache";
      out.scales.channels[tensor.name] = std::move(scales);
      continue;
    }
    require(!cache.channels.contains(tensor.name), "the calibration cache holds per-channel scales for '",
            tensor.name,
            "', which this build quantizes per tensor: give a new --calib-cache path, or "
            "--depthwise-input-scales per-channel");
    const auto cached = cache.tensors.find(tensor.name);
    require(cached != cache.tensors.end(), "the calibration cache has no scale for '", tensor.name, "'");
    out.scales.tensors[tensor.name] = cached->second;
    out.tensors[tensor.name] = {{"scale", cached->second}, {"from", "calibration cache"}};
  }
  return out;
}

namespace {

// The calibration pass over the images: the shared one, or one of its own.
const ActivationCalibration& observe(const Graph& graph, const std::vector<ValueId>& inputs,
                                     const std::vector<ValueId>& per_channel, const Fp8Settings& settings,
                                     const CalibrationImages& data,
                                     std::unique_ptr<ActivationCalibration>& own) {
  if (data.shared) return data.shared->observed(graph, data.images, settings.backend, settings.threads);
  own =
      std::make_unique<ActivationCalibration>(graph, inputs, settings.backend, settings.threads, per_channel);
  Progress progress("calibrate", data.images.size());
  for (const Tensor& image : data.images) {
    own->observe(image);
    progress.advance();
  }
  progress.finish();
  return *own;
}

// One threshold per channel: the report keeps the range of scales, the largest threshold and how many
// channels were zero throughout.
nlohmann::json calibrate_channels(const ActivationCalibration& calibration, const std::string& name,
                                  CalibrationMethod method, const CalibrationOptions& options,
                                  std::vector<float>& scales) {
  float amax = 0.0f;
  std::size_t all_zero = 0;
  for (const CalibrationResult& result : calibration.choose_channels(method, options, name)) {
    scales.push_back(result.scale);
    amax = std::max(amax, result.amax);
    all_zero += result.all_zero ? 1 : 0;
  }
  nlohmann::json report = channel_report(scales);
  report["amax"] = amax;
  report["all_zero_channels"] = all_zero;
  return report;
}

}  // namespace

InputScales calibrated_input_scales(const Graph& graph, const std::vector<ValueId>& inputs,
                                    const std::vector<ValueId>& per_channel, const Fp8Settings& settings,
                                    const CalibrationImages& data) {
  std::unique_ptr<ActivationCalibration> own;
  const ActivationCalibration& calibration = observe(graph, inputs, per_channel, settings, data, own);
  CalibrationOptions options = settings.calibration;
  options.format = settings.format;
  InputScales out;
  for (const ValueId value : inputs) {
    const std::string& name = graph.value(value).name;
    const AbsHistogram& histogram = calibration.histogram(name);
    nlohmann::json& report = out.tensors[name];
    if (contains(per_channel, value)) {
      report = calibrate_channels(calibration, name, settings.method, options, out.scales.channels[name]);
    } else {
      const CalibrationResult result = calibration.choose(settings.method, options, {name}).at(name);
      out.scales.tensors[name] = result.scale;
      report = {{"amax", result.amax}, {"scale", result.scale}, {"all_zero", result.all_zero}};
    }
    report["observed_amax"] = histogram.amax();
    report["nan"] = histogram.nan_count();
    report["inf"] = histogram.inf_count();
  }
  return out;
}

nlohmann::json activation_scales_json(const ActivationScales& scales) {
  nlohmann::json json = {{"scales", scales.tensors}};
  if (!scales.channels.empty()) json["channel_scales"] = scales.channels;
  return json;
}

}  // namespace kiln
