// FP8 layers the build's backend cannot run in FP8, though it runs them unquantized: cuDNN's FP8
// convolutions need channel counts that are multiples of 16, so an EfficientNet's 24- and 40-channel
// stages or its squeeze-excitation convolutions cannot be FP8 on cuda (TensorRT keeps such layers in a
// higher precision too). The builder keeps them fp16 on that backend instead of sending them to the CPU
// fallback, and the plan says which and why; a strict-precision build refuses them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "backends/backend.h"

namespace kiln {

struct Fp8Refusal {
  std::string layer;
  std::string reason;  // the backend's, e.g. "cuDNN's FP8 convolutions need ..."
};

// The recipe's FP8 layers (the quantization report's "layers") that `backend` does not run as they are in
// `quantized` but does run as they are in `unquantized` (the same graph before quantization).
std::vector<Fp8Refusal> fp8_layers_refused(const Graph& quantized, const Graph& unquantized,
                                           const nlohmann::json& quantization, const Backend& backend);

// [{"layer": ..., "reason": ...}]: the plan's record ("kept_fp16_unsupported" in the quantization report).
nlohmann::json refusals_json(const std::vector<Fp8Refusal>& refusals);

}  // namespace kiln
