#include "quant/fp8_build.h"

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "quant/fp8_rewrite.h"
#include "quant/input_scales.h"
#include "quant/layer_selection.h"

namespace kiln {

namespace {

// The inputs an int8 build quantizes per channel (those only depthwise convolutions among `layers` read);
// none for FP8 or --depthwise-input-scales per-tensor.
std::vector<ValueId> per_channel_inputs(const Graph& graph, const std::vector<std::string>& layers,
                                        const Fp8Settings& settings) {
  if (settings.format != QuantFormat::kInt8 ||
      settings.depthwise_input_scales != DepthwiseInputScales::kPerChannel)
    return {};
  return depthwise_only_inputs(graph, layers);
}

// The chosen recipe measured on the calibration images the search did not run on: a search on a few
// images can meet its target by chance ("16 of 16") where the same layers fall short on the others.
nlohmann::json check_on_held_out(const Graph& graph, const AutoSearchResult& search,
                                 const ActivationScales& scales, const Fp8Settings& settings,
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
                                            const ActivationScales& scales, const Fp8Settings& settings,
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
  require(!settings.quantize_residuals || settings.recipe != "auto",
          "--quantize-residuals: not with --recipe auto (its search compares plans without it)");
  require(!data.images.empty() || (settings.cached_scales && !automatic), name,
          ": calibration needs at least one image");
  const std::vector<std::string> candidates = fixed ? *settings.fixed_layers
                                              : automatic
                                                  ? quantizable_layers(graph)
                                                  : select_layers(graph, parse_recipe(settings.recipe));
  require(fixed || !candidates.empty(), name, ": recipe '", settings.recipe, "' selects no convolution");

  const std::vector<ValueId> inputs = fp8_activation_inputs(graph, candidates);
  const std::vector<ValueId> per_channel = per_channel_inputs(graph, candidates, settings);
  const InputScales activations =
      settings.cached_scales ? cached_input_scales(graph, inputs, per_channel, *settings.cached_scales)
                             : calibrated_input_scales(graph, inputs, per_channel, settings, data);
  const ActivationScales& scales = activations.scales;
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
  if (settings.format == QuantFormat::kInt8)
    report["depthwise_input_scales"] = depthwise_input_scales_name(settings.depthwise_input_scales);

  const std::vector<std::string> layers =
      automatic ? search_auto_layers(graph, candidates, scales, settings, data, report) : candidates;
  const std::vector<Fp8Layer> rewritten =
      rewrite_to_fp8(graph, layers, scales, settings.per_channel_weights, settings.format);
  report["per_channel_input_layers"] = nlohmann::json::array();
  for (const Fp8Layer& layer : rewritten) {
    report["layers"].push_back({{"layer", layer.layer},
                                {"input", layer.activation},
                                {"input_scale", layer.activation_scale},
                                {"weight_scale_min", layer.weight_scale_min},
                                {"weight_scale_max", layer.weight_scale_max}});
    if (!layer.per_channel_input) continue;
    report["layers"].back()["input_scales"] = "per-channel";
    report["layers"].back()["input_scale_min"] = layer.activation_scale_min;
    report["per_channel_input_layers"].push_back(layer.layer);
  }
  if (settings.quantize_residuals) {
    report[settings.format == QuantFormat::kE4M3 ? "residuals_in_e4m3" : "residuals_in_int8"] =
        quantize_residuals(graph);
  }
  report["quantized_layers"] = rewritten.size();
  if (settings.format == QuantFormat::kE4M3) report["fp8_layers"] = rewritten.size();
  report["tensors"] = activations.tensors;
  report["calibration_cache"] = {{"format", kCalibrationCacheFormat},
                                 {"grid", quant_format_name(settings.format)},
                                 {"calibration", calibration_method_name(settings.method)},
                                 {"data", data.source}};
  report["calibration_cache"].update(activation_scales_json(scales));
  return report;
}

Quantizer fp8_quantizer(Fp8Settings settings, std::shared_ptr<const CalibrationImages> data) {
  return [settings = std::move(settings), data = std::move(data)](Graph& graph, const FixedFp8Layers* fixed) {
    if (fixed == nullptr) return quantize_fp8(graph, settings, *data);
    Fp8Settings rebuild = settings;
    rebuild.fixed_layers = fixed->layers;
    rebuild.cached_scales = ActivationScales{fixed->scales, fixed->channel_scales};
    return quantize_fp8(graph, rebuild, *data);
  };
}

}  // namespace kiln
