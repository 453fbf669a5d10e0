#include "builder/build_plan.h"

#include <algorithm>

#include "core/error.h"
#include "graph/precision_assignment.h"
#include "graph/verifier.h"
#include "runtime/engine.h"

namespace kiln {

int pass_level_for(std::int64_t opt_level) {
  return static_cast<int>(std::clamp<std::int64_t>(opt_level, 0, kMaxPassLevel));
}

BuildResult build_plan(BuildInput input, const BuildOptions& options) {
  require(options.batch >= 1, "batch must be at least 1, got ", options.batch);
  require(options.opt_level >= 0, "optimization level must be >= 0, got ", options.opt_level);
  BuildResult result;
  PassOptions pass_options;
  pass_options.level = pass_level_for(options.opt_level);
  pass_options.disabled = options.disabled_passes;
  result.passes = run_passes(input.graph, pass_options);
  nlohmann::json quantization = nlohmann::json::object();
  if (options.precision == Precision::kF8) {
    require(static_cast<bool>(options.quantizer),
            "fp8 builds need a quantization recipe and calibration data");
    quantization = options.quantizer(input.graph);
    assign_precision(input.graph, options.fp8_fallback);
  } else {
    assign_precision(input.graph, options.precision);
  }
  input.graph.compact();
  verify(input.graph);

  PlanInfo& info = result.plan.info;
  info.family = input.family;
  info.backend = options.backend;
  info.precision = options.precision;
  info.opt_level = options.opt_level;
  info.batch = options.batch;
  info.checkpoint_name = input.checkpoint_name;
  info.checkpoint_sha256 = input.checkpoint_sha256;
  for (const auto& run : result.passes.runs) info.passes.push_back(run.name);
  info.quantization = std::move(quantization);
  result.plan.config = std::move(input.config);
  result.plan.graph = std::move(input.graph);

  // As TensorRT's builder does: a backend that times kernels does it now, and the plan keeps what won.
  if (make_backend(options.backend)->chooses_tactics()) {
    CompileOptions compile;
    compile.batch = options.batch;
    compile.opt_level = options.opt_level;
    compile.tactic_cache = options.tactic_cache;
    compile.strict_backend = options.strict_backend;
    const Engine engine(std::make_shared<const Plan>(result.plan), options.backend, compile);
    result.plan.info.layer_data = engine.layer_data();
    result.fallback_layers = engine.fallback_layers();
  }
  return result;
}

}  // namespace kiln
