// The FP8 engines against a fake quantization of the same plans: each FP8 variant's plan also runs on a
// CPU backend that simulates it (E4M3 codes, fp32 arithmetic: the same scales, quantize points and
// fallback layers), on a capped sample of the held-out images. Where the engine and the simulation lose
// the same accuracy, the loss is the recipe's (its scales and layer choice), not the kernels'.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "eval/metrics.h"
#include "plan/plan.h"
#include "runtime/engine.h"

namespace kiln {

// The backend that fake-quantizes: kiln's reference kernels, which round to E4M3 and compute in fp32.
inline constexpr const char* kFakeQuantBackend = "cpu-reference";

struct FakeQuantVariant {
  std::string variant;
  LabelMetrics engine_labels;       // the engine's top-1 against labels, on the sampled images
  LabelMetrics emulation_labels;    // the fake quantization's, on the same images
  ReferenceMetrics vs_emulation;    // the engine's logits against the fake quantization's
  std::size_t fallback_layers = 0;  // layers the fake-quantizing backend handed to another CPU backend
  double seconds = 0.0;
};

struct FakeQuantCheck {
  std::string backend;            // the engines' backend
  std::string emulation_backend;  // kFakeQuantBackend
  std::size_t held_out_images = 0;
  std::size_t cap = 0;     // at most this many held-out images (study.fake_quant_images)
  std::size_t images = 0;  // evaluated (skipped ones aside)
  bool labelled = false;
  std::vector<FakeQuantVariant> variants;  // one per FP8 variant, in study order
  nlohmann::json to_json() const;
};

// One FP8 variant's plan and the engine the study evaluated.
struct Fp8Engine {
  std::string variant;
  std::shared_ptr<const Plan> plan;
  Engine* engine = nullptr;
};

// Runs each engine and its plan's fake quantization on up to `cap` of `held_out` (a fixed-stride
// sample of them), the simulation spread over the machine's cores. cap 0, or no FP8 variant: no check.
FakeQuantCheck check_fake_quantization(std::span<const Fp8Engine> fp8, const Dataset& dataset,
                                       std::span<const std::size_t> held_out, std::size_t cap,
                                       const std::string& backend);

// "### FP8 engine vs fake quantization of the same plan": the table and one line on what it shows
// (a difference beyond `top1_tolerance`, a fraction, names the kernels). Empty without a check.
std::string fake_quant_section(const FakeQuantCheck& check, double top1_tolerance);

}  // namespace kiln
