// The precision tactic: an FP8 (or int8) build on a backend that times kernels keeps a layer fp16 where
// the fp16 convolution of that layer timed faster than its FP8 one, as TensorRT's builder picks each
// layer's precision among those it is allowed. The times come from two compiles of the same graph, one fp16
// and one FP8 (each layer's stored tactic); a layer one of them did not time (fused into another
// step, or tactics from heuristics) stays as the recipe chose. An int8 build is judged the same way;
// its records name its int8 layers and times as FP8 ones ("fp8_layers", "fp8_us").
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct LayerPrecisionTime {
  std::string layer;
  double fp8_us = 0.0;
  double fp16_us = 0.0;
};

// What a layer outside FP8 pays for its FP8 readers: it writes their E4M3 codes too, which neither of the
// first two compiles timed (in the all-FP8 one it was FP8 itself, in the fp16 one nothing read codes).
// The plan compiled with the choice shows it: `extra_us` is the producer's time there over its fp16
// time, `saved_us` what its FP8 readers save against fp16. Where that does not pay, the readers go back
// to fp16.
struct CodesCharge {
  std::string producer;
  std::vector<std::string> readers;
  double extra_us = 0.0;
  double saved_us = 0.0;
};

struct PrecisionChoice {
  std::vector<std::string> fp8_layers;        // still FP8, in the FP8 build's order
  std::vector<LayerPrecisionTime> kept_fp16;  // faster in fp16
  std::vector<LayerPrecisionTime> kept_fp8;   // timed both ways, FP8 at least as fast
  std::vector<std::string> untimed;           // FP8 layers without both times: left FP8
  std::vector<CodesCharge> codes_charges;     // readers put back to fp16 for their producer's codes

  // The plan's record ("precision_tactic" in the quantization report).
  nlohmann::json to_json() const;
};

// The time a tactic-timing backend measured for one layer's chosen tactic (its layer data's
// tactic.us), if it timed one.
std::optional<double> timed_microseconds(const nlohmann::json& layer_data);

// Splits the FP8 build's layers by which precision ran them faster.
PrecisionChoice choose_layer_precisions(const std::vector<std::string>& fp8_layers,
                                        const std::map<std::string, nlohmann::json>& fp8_data,
                                        const std::map<std::string, nlohmann::json>& fp16_data);

// The charges that do not pay, from the compiled plan's times (`mixed_data`) and the fp16 compile's.
// `producer_of`: each FP8 layer's producer (the layer writing its input); producers that are FP8 layers
// themselves, and layers without both times, are not charged.
std::vector<CodesCharge> unpaid_codes(const std::vector<std::string>& fp8_layers,
                                      const std::map<std::string, std::string>& producer_of,
                                      const std::map<std::string, nlohmann::json>& mixed_data,
                                      const std::map<std::string, nlohmann::json>& fp16_data);

nlohmann::json codes_charges_json(const std::vector<CodesCharge>& charges);

}  // namespace kiln
