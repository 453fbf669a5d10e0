// The activation scales an FP8 or int8 build quantizes its layers' inputs with: read from a calibration
// cache or calibrated on images, one per tensor or, for the tensors an int8 build quantizes per channel
// (quant/depthwise_inputs.h), one per channel; and what the build's report says about each tensor.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "graph/graph.h"
#include "quant/activation_scales.h"

namespace kiln {

struct Fp8Settings;
struct CalibrationImages;

struct InputScales {
  ActivationScales scales;
  nlohmann::json tensors = nlohmann::json::object();  // per tensor: its scale(s) and where they came from
};

// `inputs`: the tensors the quantized layers read; `per_channel`: those of them quantized per channel.
// From a cache, which must hold each tensor as the build quantizes it: one scale, or one per channel of
// the tensor. Fails naming the tensor otherwise.
InputScales cached_input_scales(const Graph& graph, const std::vector<ValueId>& inputs,
                                const std::vector<ValueId>& per_channel, const ActivationScales& cache);
// Calibrated on the images with the settings' method and grid, each channel of a per-channel tensor alone.
InputScales calibrated_input_scales(const Graph& graph, const std::vector<ValueId>& inputs,
                                    const std::vector<ValueId>& per_channel, const Fp8Settings& settings,
                                    const CalibrationImages& data);

// {"scales": {TENSOR: SCALE}, "channel_scales": {TENSOR: [SCALE, ...]}} (channel_scales only when there are
// any), as calibration caches hold them (quant/calibration_cache.h).
nlohmann::json activation_scales_json(const ActivationScales& scales);

}  // namespace kiln
