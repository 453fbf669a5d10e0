#include "pipeline/build_settings.h"

#include "core/error.h"
#include "backends/backend.h"

namespace kiln::pipeline {

namespace {

// Everything but the FP8 quantizer, which needs the graph and the calibration images' preprocessing.
// The precision asked for; else the manifest's, unless the backend runs another faster for this graph
// (the fp16 manifests on the cpu backend, which emulates fp16), which the plan then records with its
// reason.
void choose_precision(BuildOptions& options, const Manifest& manifest, const BuildOverrides& overrides,
                      const Graph& graph) {
  if (overrides.precision) return;
  if (const auto advice = make_backend(options.backend)->better_default(graph, manifest.precision)) {
    options.precision = advice->precision;
    options.precision_reason = advice->reason;
  }
}

BuildOptions plain_options(const Manifest& manifest, const BuildOverrides& overrides) {
  BuildOptions options;
  options.backend = overrides.backend.value_or(manifest.backends.front());
  options.precision = overrides.precision.value_or(manifest.precision);
  options.opt_level = overrides.opt_level.value_or(manifest.opt_level);
  options.batch = overrides.batch.value_or(manifest.batch_sizes.front());
  options.disabled_passes = overrides.disabled_passes;
  options.tactic_cache = overrides.tactic_cache;
  options.backend_options = make_backend(options.backend)->resolve_options(overrides.backend_options);
  options.strict_backend = overrides.strict_backend;
  options.strict_precision = overrides.strict_precision;
  return options;
}

// The quantization options of a build: the other layers' precision, unless given, is the one the backend
// runs quantized layers among (fp16 on cuda; on a CPU fp32 beside int8).
Fp8Options quantization_options(const Fp8Options& given, const BuildOptions& options) {
  Fp8Options fp8 = given;
  if (!fp8.fallback)
    fp8.fallback = std::string(precision_name(make_backend(options.backend)->quantized_fallback(options.precision)));
  return fp8;
}

// A precision the backend cannot run is refused before calibration spends its time (build_plan refuses it
// again for builds that do not come through here).
void require_backend_runs(const BuildOptions& options) {
  const std::string refusal = make_backend(options.backend)->precision_refusal(options.precision);
  require(refusal.empty(), "precision ", precision_name(options.precision), " on the ", options.backend,
          " backend: ", refusal);
}

void set_fp8(BuildOptions& options, Fp8Quantization fp8) {
  options.quantizer = std::move(fp8.quantizer);
  options.fp8_fallback = fp8.fallback;
}

}  // namespace

BuildOptions build_options(const Manifest& manifest, const BuildOverrides& overrides,
                           const BuildInput& input) {
  BuildOptions options = plain_options(manifest, overrides);
  choose_precision(options, manifest, overrides, input.graph);
  require_backend_runs(options);
  if (is_quantized(options.precision))
    set_fp8(options, make_fp8_quantization(quantization_options(overrides.fp8, options), options.precision, manifest, input.graph,
                                           input.config.preprocess));
  return options;
}

BuildOptions build_options(const Manifest& manifest, const BuildOverrides& overrides,
                           const ModelSource& source) {
  if (!source.to_input) return build_options(manifest, overrides, source.input);
  BuildOptions options = plain_options(manifest, overrides);
  choose_precision(options, manifest, overrides, source.input.graph);
  require_backend_runs(options);
  const bool auto_recipe = overrides.fp8.recipe.value_or(manifest.quantization ? manifest.quantization->recipe
                                                                               : std::string()) == "auto";
  require(
      !(is_quantized(options.precision) && auto_recipe && overrides.fp8.auto_target.starts_with("agreement")),
      "--auto-target ", overrides.fp8.auto_target,
      ": top-1 agreement is for classifiers; a detector's auto recipe takes logit-error=VALUE (the relative "
      "error of its decoded predictions)");
  if (is_quantized(options.precision))
    set_fp8(options, make_fp8_quantization(quantization_options(overrides.fp8, options), options.precision, manifest, source.input.graph,
                                           source.to_input));
  return options;
}

}  // namespace kiln::pipeline
