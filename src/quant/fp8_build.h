// FP8 or int8 post-training quantization of a graph, end to end: choose the layers (a recipe, or the auto
// search), calibrate the tensors they read on the format's grid, rewrite them with quantize points. Both
// formats share everything here but the grid, so that a study compares them on equal terms. The builder calls
// this between its graph passes and precision assignment (builder/build_plan.h); the report it returns is
// stored in the plan (PlanInfo::quantization).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "builder/build_plan.h"
#include "graph/graph.h"
#include "quant/auto_recipe.h"
#include "quant/calibration_cache.h"
#include "quant/calibrator.h"
#include "quant/depthwise_inputs.h"

namespace kiln {

struct Fp8Settings {
  QuantFormat format = QuantFormat::kE4M3;  // FP8 E4M3, or int8
  std::string recipe = "all";               // all | nose | nose-L1 | auto | include=...;exclude=...
  CalibrationMethod method = CalibrationMethod::kMax;
  CalibrationOptions calibration;
  bool per_channel_weights = true;
  Precision fallback = Precision::kF16;  // layers outside FP8
  AutoTarget auto_target;
  std::size_t sensitivity_images = 16;  // auto: calibration images the search compares on
  std::string backend = "cpu";          // runs calibration and the auto search
  int threads = 0;
  // int8: one scale per channel for the tensors only depthwise convolutions read, each channel calibrated
  // alone (quant/depthwise_inputs.h); FP8 quantizes every activation per tensor.
  DepthwiseInputScales depthwise_input_scales = DepthwiseInputScales::kPerChannel;
  // Activation scales from an earlier calibration (a calibration cache, see read_calibration_cache);
  // when set, no calibration runs and the cache must cover every tensor the chosen layers read, per
  // channel where this build quantizes per channel.
  std::optional<ActivationScales> cached_scales;
  // Exactly these layers in FP8, neither the recipe nor the auto search choosing (a rebuild by the
  // precision tactic, builder/precision_tactic.h); may be empty. Needs cached_scales.
  std::optional<std::vector<std::string>> fixed_layers;
  // FP8: the residual stream held as E4M3 codes where only residual adds read an FP8 layer's input
  // besides it (quantize_residuals(), quant/fp8_rewrite.h). Not with the auto recipe, whose search
  // compares graphs without it.
  bool quantize_residuals = false;
};

class SharedCalibration;

struct CalibrationImages {
  std::vector<Tensor> images;  // preprocessed, [1, 3, H, W] each
  nlohmann::json source;       // where they came from (dataset, sample, split), for the report
  // When set, every FP8 build on these images chooses its scales from one calibration pass
  // (quant/shared_calibration.h) instead of making its own: for several builds of one model.
  std::shared_ptr<SharedCalibration> shared;
};

// Rewrites `graph` (fp32, after passes) and returns the quantization report. `data` may be empty when
// settings.cached_scales is set and the recipe is not auto.
nlohmann::json quantize_fp8(Graph& graph, const Fp8Settings& settings, const CalibrationImages& data);

// The builder's Quantizer over quantize_fp8: the settings' recipe, or the layers and scales a precision-
// tactic rebuild fixes. `data` must outlive the quantizer.
Quantizer fp8_quantizer(Fp8Settings settings, std::shared_ptr<const CalibrationImages> data);

}  // namespace kiln
