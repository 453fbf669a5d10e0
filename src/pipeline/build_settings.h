// A build's settings: what the caller overrides, else what the family manifest says.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "builder/build_plan.h"
#include "manifest/manifest.h"
#include "pipeline/fp8_settings.h"
#include "pipeline/model_source.h"

namespace kiln::pipeline {

struct BuildOverrides {
  std::optional<Precision> precision;
  std::optional<std::int64_t> opt_level;
  std::optional<std::int64_t> batch;   // default: the manifest's first batch size
  std::optional<std::string> backend;  // default: the manifest's first backend
  std::set<std::string> disabled_passes;
  std::string tactic_cache;
  // "NAME=VALUE" for the backend's options (--cuda-option), in the order given.
  std::vector<std::string> backend_options;
  bool strict_backend = false;    // refuse layers the backend cannot run instead of a CPU fallback
  bool strict_precision = false;  // FP8 layers stay FP8 where fp16 times faster (BuildOptions)
  Fp8Options fp8;                 // used when the precision is fp8
};

// For fp8 this makes the quantizer, loading its calibration images (pipeline/fp8_settings.h).
BuildOptions build_options(const Manifest& manifest, const BuildOverrides& overrides,
                           const BuildInput& input);
// The same for a model source: a detector's FP8 calibration images are letterboxed (source.to_input).
BuildOptions build_options(const Manifest& manifest, const BuildOverrides& overrides,
                           const ModelSource& source);

}  // namespace kiln::pipeline
