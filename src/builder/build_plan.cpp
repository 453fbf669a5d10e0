#include "builder/build_plan.h"

#include <algorithm>

#include "builder/fp8_refusals.h"
#include "builder/precision_tactic.h"
#include "core/error.h"
#include "graph/precision_assignment.h"
#include "graph/verifier.h"
#include "runtime/engine.h"

namespace kiln {

namespace {

// Quantizes (fp8, int8) or assigns the one precision, then leaves the graph compact and verified; returns
// the quantization report (empty but for fp8 and int8).
nlohmann::json set_precision(Graph& graph, const BuildOptions& options, const FixedFp8Layers* fixed) {
  nlohmann::json quantization = nlohmann::json::object();
  if (is_quantized(options.precision)) {
    quantization = options.quantizer(graph, fixed);
    assign_precision(graph, options.fp8_fallback);
  } else {
    assign_precision(graph, options.precision);
  }
  graph.compact();
  verify(graph);
  return quantization;
}

PlanInfo plan_info(const BuildInput& input, const BuildOptions& options, const PassReport& passes) {
  PlanInfo info;
  info.family = input.family;
  info.backend = options.backend;
  info.precision = options.precision;
  info.precision_reason = options.precision_reason;
  info.opt_level = options.opt_level;
  info.batch = options.batch;
  // Every option, so that the plan runs the way it was built even where a later kiln changes a default.
  info.backend_options = options.backend_options.empty() ? make_backend(options.backend)->resolve_options({})
                                                         : options.backend_options;
  info.checkpoint_name = input.checkpoint_name;
  info.checkpoint_sha256 = input.checkpoint_sha256;
  for (const auto& run : passes.runs) info.passes.push_back(run.name);
  return info;
}

// As TensorRT's builder does: a backend that times kernels does it now, and the plan keeps what won.
// `known`: tactics an earlier compile chose, reused where they still fit.
void choose_tactics(BuildResult& result, const BuildOptions& options,
                    const std::map<std::string, nlohmann::json>& known = {}) {
  CompileOptions compile;
  compile.batch = options.batch;
  compile.opt_level = options.opt_level;
  compile.tactic_cache = options.tactic_cache;
  compile.strict_backend = options.strict_backend;
  compile.backend_options = options.backend_options;
  compile.layer_data = known;
  const Engine engine(std::make_shared<const Plan>(result.plan), options.backend, compile);
  result.plan.info.layer_data = engine.layer_data();
  result.fallback_layers = engine.fallback_layers();
}

// What each layer's fp16 convolution takes: the graph before quantization compiled in fp16.
std::map<std::string, nlohmann::json> fp16_layer_data(const Graph& unquantized, const BuildResult& fp8,
                                                      BuildOptions options) {
  options.precision = Precision::kF16;
  BuildResult fp16;
  fp16.plan.graph = unquantized;
  set_precision(fp16.plan.graph, options, nullptr);
  fp16.plan.info = fp8.plan.info;
  fp16.plan.info.precision = Precision::kF16;
  fp16.plan.info.quantization = nlohmann::json::object();
  fp16.plan.config = fp8.plan.config;
  choose_tactics(fp16, options);
  return fp16.plan.info.layer_data;
}

std::vector<std::string> fp8_layer_names(const nlohmann::json& quantization) {
  std::vector<std::string> names;
  for (const nlohmann::json& layer : quantization.value("layers", nlohmann::json::array()))
    names.push_back(layer.at("layer").get<std::string>());
  return names;
}

// The first quantization's report with a rebuild's layers (its calibration and scales stay).
nlohmann::json rebuilt_report(nlohmann::json first, const nlohmann::json& rebuild) {
  first["layers"] = rebuild.value("layers", nlohmann::json::array());
  first["quantized_layers"] = rebuild.value("quantized_layers", 0);
  if (rebuild.contains("fp8_layers")) first["fp8_layers"] = rebuild["fp8_layers"];
  if (rebuild.contains("per_channel_input_layers"))
    first["per_channel_input_layers"] = rebuild["per_channel_input_layers"];
  nlohmann::json tensors = nlohmann::json::object();
  for (const nlohmann::json& layer : first["layers"]) {
    const std::string input = layer.at("input").get<std::string>();
    if (first["tensors"].contains(input)) tensors[input] = first["tensors"][input];
  }
  first["tensors"] = std::move(tensors);
  return first;
}

// Quantizes `unquantized` again with exactly `layers` in FP8, on the first quantization's scales.
Graph requantize(const Graph& unquantized, std::vector<std::string> layers, nlohmann::json& quantization,
                 const BuildOptions& options) {
  FixedFp8Layers fixed{std::move(layers), {}, {}};
  const nlohmann::json& cache = quantization.at("calibration_cache");
  for (const auto& [tensor, scale] : cache.at("scales").items()) fixed.scales[tensor] = scale.get<float>();
  for (const auto& [tensor, scales] : cache.value("channel_scales", nlohmann::json::object()).items())
    fixed.channel_scales[tensor] = scales.get<std::vector<float>>();
  Graph graph = unquantized;
  const nlohmann::json rebuild = set_precision(graph, options, &fixed);
  quantization = rebuilt_report(std::move(quantization), rebuild);
  return graph;
}

// Recipe layers the backend cannot run in FP8 (builder/fp8_refusals.h) stay fp16 on it, or fail a
// strict-precision build.
void keep_refused_layers_fp16(Graph& graph, nlohmann::json& quantization, const Graph& unquantized,
                              const Backend& backend, const BuildOptions& options) {
  const std::vector<Fp8Refusal> refused = fp8_layers_refused(graph, unquantized, quantization, backend);
  if (refused.empty()) return;
  const std::string_view precision = options.precision == Precision::kF8 ? "FP8" : precision_name(options.precision);
  if (options.strict_precision)
    throw Error(cat("layer '", refused.front().layer, "' cannot be ", precision, " on the ", options.backend,
                    " backend (", refused.front().reason, "), and strict precision keeps every recipe layer ",
                    precision, "; take it out of the recipe (", refused.size(), " such layers)"));
  std::vector<std::string> kept;
  for (const std::string& layer : fp8_layer_names(quantization)) {
    const auto is_refused = [&](const Fp8Refusal& r) { return r.layer == layer; };
    if (std::none_of(refused.begin(), refused.end(), is_refused)) kept.push_back(layer);
  }
  graph = requantize(unquantized, std::move(kept), quantization, options);
  quantization["kept_fp16_unsupported"] = refusals_json(refused);
}

// Each FP8 layer's producer in `graph`: the node writing its input.
std::map<std::string, std::string> producers_of(const Graph& graph, const std::vector<std::string>& layers) {
  std::map<std::string, std::string> producers;
  for (const std::string& layer : layers) {
    const std::optional<NodeId> node = graph.find_node(layer);
    if (!node || graph.node(*node).inputs.empty()) continue;
    const NodeId producer = graph.value(graph.node(*node).inputs.front()).producer;
    if (producer != kNoNode) producers[layer] = graph.node(producer).name;
  }
  return producers;
}

// A producer outside FP8 writes its FP8 readers' codes; where the compiled plan shows that costing more
// than those readers save, they go back to fp16 and the plan is compiled again. Twice at most: a layer
// put back to fp16 then writes the codes of its own FP8 readers, which the next compile shows.
constexpr int kCodesRounds = 2;

void put_back_unpaid_readers(BuildResult& result, PrecisionChoice& choice, const Graph& unquantized,
                             const std::map<std::string, nlohmann::json>& fp16_data,
                             const BuildOptions& options) {
  const std::map<std::string, std::string> producers = producers_of(unquantized, choice.fp8_layers);
  for (int round = 0; round < kCodesRounds; ++round) {
    std::vector<CodesCharge> unpaid =
        unpaid_codes(choice.fp8_layers, producers, result.plan.info.layer_data, fp16_data);
    if (unpaid.empty()) return;
    std::map<std::string, nlohmann::json> known = result.plan.info.layer_data;
    for (const CodesCharge& charge : unpaid) {
      for (const std::string& reader : charge.readers) {
        std::erase(choice.fp8_layers, reader);
        if (fp16_data.contains(reader)) known[reader] = fp16_data.at(reader);
      }
      choice.codes_charges.push_back(charge);
    }
    result.plan.graph = requantize(unquantized, choice.fp8_layers, result.plan.info.quantization, options);
    choose_tactics(result, options, known);
  }
}

// Keeps fp16 the FP8 layers whose fp16 convolution timed faster: quantizes the graph again with the
// others only (same scales), and compiles it reusing both compiles' tactics; then the layers whose fp16
// producer's codes cost more than they save.
void apply_precision_tactic(BuildResult& result, const Graph& unquantized, const BuildOptions& options) {
  const std::map<std::string, nlohmann::json> fp16_data = fp16_layer_data(unquantized, result, options);
  nlohmann::json& quantization = result.plan.info.quantization;
  PrecisionChoice choice =
      choose_layer_precisions(fp8_layer_names(quantization), result.plan.info.layer_data, fp16_data);
  if (!choice.kept_fp16.empty()) {
    std::map<std::string, nlohmann::json> known = result.plan.info.layer_data;
    for (const LayerPrecisionTime& kept : choice.kept_fp16) known[kept.layer] = fp16_data.at(kept.layer);
    result.plan.graph = requantize(unquantized, choice.fp8_layers, quantization, options);
    choose_tactics(result, options, known);
  }
  put_back_unpaid_readers(result, choice, unquantized, fp16_data, options);
  result.plan.info.quantization["precision_tactic"] = choice.to_json();
}

}  // namespace

int pass_level_for(std::int64_t opt_level) {
  return static_cast<int>(std::clamp<std::int64_t>(opt_level, 0, kMaxPassLevel));
}

BuildResult build_plan(BuildInput input, const BuildOptions& options) {
  require(options.batch >= 1, "batch must be at least 1, got ", options.batch);
  require(options.opt_level >= 0 && options.opt_level <= kMaxOptLevel, "optimization level must be 0 to ",
          kMaxOptLevel, ", got ", options.opt_level);
  require(!is_quantized(options.precision) || static_cast<bool>(options.quantizer),
          precision_name(options.precision), " builds need a quantization recipe and calibration data");
  BuildResult result;
  PassOptions pass_options;
  pass_options.level = pass_level_for(options.opt_level);
  pass_options.disabled = options.disabled_passes;
  result.passes = run_passes(input.graph, pass_options);

  const std::unique_ptr<Backend> backend = make_backend(options.backend);
  const std::string refusal = backend->precision_refusal(options.precision);
  require(refusal.empty(), "precision ", precision_name(options.precision), " on the ", options.backend,
          " backend: ", refusal);
  const bool times_kernels = backend->chooses_tactics();
  // Level 0 takes the libraries' heuristic tactics: nothing timed to compare precisions by.
  const bool precision_tactic =
      times_kernels && is_quantized(options.precision) && !options.strict_precision && options.opt_level > 0;
  const Graph unquantized = is_quantized(options.precision) ? input.graph : Graph();
  nlohmann::json quantization = set_precision(input.graph, options, nullptr);
  if (is_quantized(options.precision)) {
    keep_refused_layers_fp16(input.graph, quantization, unquantized, *backend, options);
    // Which kernels a quantized plan's speed and rounding come from (oneDNN's ISA on cpu).
    quantization["built_on"] = nlohmann::json::object();
    for (const BackendFact& fact : backend->environment()) {
      if (!fact.of_this_process) quantization["built_on"][fact.key] = fact.value;
    }
  }

  result.plan.info = plan_info(input, options, result.passes);
  result.plan.info.quantization = std::move(quantization);
  result.plan.config = std::move(input.config);
  result.plan.graph = std::move(input.graph);
  if (times_kernels) choose_tactics(result, options);
  if (precision_tactic) apply_precision_tactic(result, unquantized, options);
  return result;
}

}  // namespace kiln
