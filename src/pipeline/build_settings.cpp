#include "pipeline/build_settings.h"

namespace kiln::pipeline {

BuildOptions build_options(const Manifest& manifest, const BuildOverrides& overrides,
                           const BuildInput& input) {
  BuildOptions options;
  options.precision = overrides.precision.value_or(manifest.precision);
  if (options.precision == Precision::kF8) {
    Fp8Quantization fp8 =
        make_fp8_quantization(overrides.fp8, manifest, input.graph, input.config.preprocess);
    options.quantizer = std::move(fp8.quantizer);
    options.fp8_fallback = fp8.fallback;
  }
  options.opt_level = overrides.opt_level.value_or(manifest.opt_level);
  options.batch = overrides.batch.value_or(manifest.batch_sizes.front());
  options.backend = overrides.backend.value_or(manifest.backends.front());
  options.disabled_passes = overrides.disabled_passes;
  options.tactic_cache = overrides.tactic_cache;
  options.strict_backend = overrides.strict_backend;
  return options;
}

}  // namespace kiln::pipeline
