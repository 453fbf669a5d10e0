#include "quant/fp8_build.h"

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/progress.h"
#include "quant/activation_calibration.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "quant/shared_calibration.h"

namespace kiln {

namespace {
// One static scale per FP8 layer input, and what the report says about each tensor.
struct ActivationScales {
  std::map<std::string, float> scales;
  nlohmann::json tensors = nlohmann::json::object();
};

// Scales from an earlier build's calibration cache; every FP8 input must have one.
ActivationScales cached_activation_scales(const Graph& graph, const std::vector<std::string>& candidates,
                                          const std::map<std::string, float>& cache) {
  ActivationScales out;
  for (const ValueId value : fp8_activation_inputs(graph, candidates)) {
    const std::string& name = graph.value(value).name;
    const auto cached = cache.find(name);
    require(cached != cache.end(), "the calibration cache has no scale for '", name, "'");
    out.scales[name] = cached->second;
    out.tensors[name] = {{"scale", cached->second}, {"from", "calibration cache"}};
  }
  return out;
}

// Scales calibrated on the images with the settings' method.
ActivationScales calibrate_activation_scales(const Graph& graph, const std::vector<std::string>& candidates,
                                             const Fp8Settings& settings, const CalibrationImages& data) {
  const std::vector<ValueId> inputs = fp8_activation_inputs(graph, candidates);
  std::vector<std::string> names;
  for (const ValueId value : inputs) names.push_back(graph.value(value).name);
  std::unique_ptr<ActivationCalibration> own;
  const ActivationCalibration* calibration = nullptr;
  if (data.shared) {
    calibration = &data.shared->observed(graph, data.images, settings.backend, settings.threads);
  } else {
    own = std::make_unique<ActivationCalibration>(graph, inputs, settings.backend, settings.threads);
    Progress progress("calibrate", data.images.size());
    for (const Tensor& image : data.images) {
      own->observe(image);
      progress.advance();
    }
    progress.finish();
    calibration = own.get();
  }
  ActivationScales out;
  CalibrationOptions options = settings.calibration;
  options.format = settings.format;
  for (const auto& [name, result] : calibration->choose(settings.method, options, names)) {
    out.scales[name] = result.scale;
    const AbsHistogram& histogram = calibration->histogram(name);
    out.tensors[name] = {{"amax", result.amax},          {"observed_amax", histogram.amax()},
                         {"scale", result.scale},        {"all_zero", result.all_zero},
                         {"nan", histogram.nan_count()}, {"inf", histogram.inf_count()}};
  }
  return out;
}

// The chosen recipe measured on the calibration images the search did not run on: a search on a few
// images can meet its target by chance ("16 of 16") where the same layers fall short on the others.
nlohmann::json check_on_held_out(const Graph& graph, const AutoSearchResult& search,
                                 const std::map<std::string, float>& scales, const Fp8Settings& settings,
                                 const CalibrationImages& data, std::size_t searched) {
  const GraphComparer held_out(
      graph, {data.images.begin() + static_cast<std::ptrdiff_t>(searched), data.images.end()},
      settings.backend, settings.threads);
  const OutputError error = held_out.compare(fp8_graph(
      graph, search.fp8_layers, scales, settings.per_channel_weights, settings.fallback, settings.format));
  return {{"images", data.images.size() - searched},
          {"logit_error", error.logit_error},
          {"agreement", error.agreement},
          {"meets_target", settings.auto_target.met_by(error.agreement, error.logit_error)}};
}

// The auto recipe: keeps the most sensitive candidates out of FP8 until the target is met; returns the
// layers left in FP8 and adds the search to the report.
std::vector<std::string> search_auto_layers(Graph& graph, const std::vector<std::string>& candidates,
                                            std::map<std::string, float>& scales, const Fp8Settings& settings,
                                            const CalibrationImages& data, nlohmann::json& report) {
  const std::size_t count = std::min(settings.sensitivity_images, data.images.size());
  GraphComparer comparer(graph,
                         {data.images.begin(), data.images.begin() + static_cast<std::ptrdiff_t>(count)},
                         settings.backend, settings.threads);
  AutoSearchInput input{&graph,
                        candidates,
                        &scales,
                        settings.per_channel_weights,
                        settings.fallback,
                        settings.auto_target,
                        settings.format};
  const AutoSearchResult search = search_auto_recipe(input, comparer);
  report["auto"] = search.to_json(settings.auto_target);
  report["auto"]["images"] = count;
  if (data.images.size() > count)
    report["auto"]["held_out"] = check_on_held_out(graph, search, scales, settings, data, count);
  return search.fp8_layers;
}

}  // namespace

nlohmann::json quantize_fp8(Graph& graph, const Fp8Settings& settings, const CalibrationImages& data) {
  const std::string_view name = precision_name(precision_of(settings.format));
  require(!is_quantized(settings.fallback), name, ": the fallback precision must be fp32, fp16 or bf16");
  const bool fixed = settings.fixed_layers.has_value();
  require(!fixed || settings.cached_scales, name, ": fixed quantized layers need their activation scales");
  const bool automatic = settings.recipe == "auto" && !fixed;
  require(!settings.quantize_residuals || settings.format == QuantFormat::kE4M3,
          "--quantize-residuals: only fp8 plans hold their residual stream in E4M3");
  require(!settings.quantize_residuals || settings.recipe != "auto",
          "--quantize-residuals: not with --recipe auto (its search compares plans without it)");
  require(!data.images.empty() || (settings.cached_scales && !automatic), name,
          ": calibration needs at least one image");
  const std::vector<std::string> candidates = fixed ? *settings.fixed_layers
                                              : automatic
                                                  ? quantizable_layers(graph)
                                                  : select_layers(graph, parse_recipe(settings.recipe));
  require(fixed || !candidates.empty(), name, ": recipe '", settings.recipe, "' selects no convolution");

  ActivationScales activations = settings.cached_scales
                                     ? cached_activation_scales(graph, candidates, *settings.cached_scales)
                                     : calibrate_activation_scales(graph, candidates, settings, data);
  std::map<std::string, float>& scales = activations.scales;
  nlohmann::json report = {
      {"format", quant_format_name(settings.format)},
      {"recipe", settings.recipe},
      {"weights", settings.per_channel_weights ? "per-channel" : "per-tensor"},
      {"activations", "per-tensor"},
      {"calibration", settings.cached_scales ? std::string("calibration cache")
                                             : std::string(calibration_method_name(settings.method))},
      {"calibration_images", settings.cached_scales ? 0 : data.images.size()},
      {"data", data.source},
      {"fallback", precision_name(settings.fallback)},
  };
  if (settings.method == CalibrationMethod::kPercentile)
    report["percentile"] = settings.calibration.percentile;

  const std::vector<std::string> layers =
      automatic ? search_auto_layers(graph, candidates, scales, settings, data, report) : candidates;
  const std::vector<Fp8Layer> rewritten =
      rewrite_to_fp8(graph, layers, scales, settings.per_channel_weights, settings.format);
  for (const Fp8Layer& layer : rewritten) {
    report["layers"].push_back({{"layer", layer.layer},
                                {"input", layer.activation},
                                {"input_scale", layer.activation_scale},
                                {"weight_scale_min", layer.weight_scale_min},
                                {"weight_scale_max", layer.weight_scale_max}});
  }
  if (settings.quantize_residuals) report["residuals_in_e4m3"] = quantize_residuals(graph);
  report["quantized_layers"] = rewritten.size();
  if (settings.format == QuantFormat::kE4M3) report["fp8_layers"] = rewritten.size();
  report["tensors"] = activations.tensors;
  report["calibration_cache"] = {{"format", kCalibrationCacheFormat},
                                 {"grid", quant_format_name(settings.format)},
                                 {"calibration", calibration_method_name(settings.method)},
                                 {"data", data.source},
                                 {"scales", scales}};
  return report;
}

Quantizer fp8_quantizer(Fp8Settings settings, std::shared_ptr<const CalibrationImages> data) {
  return [settings = std::move(settings), data = std::move(data)](Graph& graph, const FixedFp8Layers* fixed) {
    if (fixed == nullptr) return quantize_fp8(graph, settings, *data);
    Fp8Settings rebuild = settings;
    rebuild.fixed_layers = fixed->layers;
    rebuild.cached_scales = fixed->scales;
    return quantize_fp8(graph, rebuild, *data);
  };
}

}  // namespace kiln
