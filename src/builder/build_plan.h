// The builder: from a graph built out of a checkpoint to a plan a runtime can load, in the order data
// flows through kiln: graph passes, precision assignment, then the plan with its bundle.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "passes/pass_manager.h"
#include "plan/plan.h"

namespace kiln {

// What a second quantization of the same graph is held to (the precision tactic's rebuild,
// builder/precision_tactic.h): exactly these layers in FP8, with the activation scales the first chose
// (per tensor, or per channel for int8 depthwise inputs: quant/activation_scales.h).
struct FixedFp8Layers {
  std::vector<std::string> layers;
  std::map<std::string, float> scales;
  std::map<std::string, std::vector<float>> channel_scales = {};
};

// Rewrites chosen layers of the fp32 graph (after passes) to FP8 and returns the report the plan keeps
// (quant/fp8_build.h makes one from a recipe and calibration data); `fixed` null: the recipe chooses.
using Quantizer = std::function<nlohmann::json(Graph&, const FixedFp8Layers* fixed)>;

struct BuildOptions {
  // kF8 / kI8: the quantizer picks FP8 / int8 layers, the rest get fp8_fallback
  Precision precision = Precision::kF32;
  Precision fp8_fallback = Precision::kF16;
  // Why `precision` was chosen when nobody asked for one (Backend::better_default); empty when it was
  // asked for or is the manifest's. The plan keeps it.
  std::string precision_reason;
  Quantizer quantizer;  // required for kF8 and kI8
  // 0: no passes, heuristic tactics; 1: exact clean-ups, a narrow timed search; 2: fusions too, a wider
  // search; 3: fusions, the widest search (backends that time kernels:
  // src/backends/cuda/program/conv_candidates.cpp).
  std::int64_t opt_level = 2;
  std::int64_t batch = 1;
  std::string backend = "cpu";
  // Backends that time kernels (cuda) choose them while building, on this machine's device; the plan
  // stores the choices. A file of timed tactics to reuse and extend (empty: none).
  std::string tactic_cache;
  // The backend's options, resolved (Backend::resolve_options); the plan records them.
  std::map<std::string, std::string> backend_options;
  std::set<std::string> disabled_passes;
  bool strict_backend = false;  // refuse layers the backend does not run instead of timing the rest
  // FP8 (int8) layers stay so even where the backend times their fp16 convolution faster (without it, a
  // tactic-timing backend's quantized build keeps those layers fp16: the precision tactic).
  bool strict_precision = false;
};

struct BuildInput {
  Graph graph;  // as the family built it
  ModelConfig config;
  std::string family;
  std::string checkpoint_name;
  std::string checkpoint_sha256;
};

struct BuildResult {
  Plan plan;
  PassReport passes;
  std::vector<std::string> fallback_layers;  // layers the tactic-timing backend left to the CPU
};

BuildResult build_plan(BuildInput input, const BuildOptions& options);

inline constexpr std::int64_t kMaxOptLevel = 3;

// The pass level an optimization level selects.
int pass_level_for(std::int64_t opt_level);

}  // namespace kiln
