// A calibration cache: the activation scale of every observed tensor, as JSON
// {"format": "kiln-fp8-calibration", "grid": "fp8-e4m3" | "int8", "calibration": METHOD,
//  "data": {..., "fingerprint": SHA256}, "scales": {TENSOR: SCALE, ...},
//  "channel_scales": {TENSOR: [SCALE, ...], ...}} (data: the images it was calibrated on,
// calibration_images.h; channel_scales, optional: int8 tensors quantized per channel, one scale per
// channel, each channel's threshold over 127, quant/depthwise_inputs.h). A scale maps its threshold to the
// grid's top, so scales of one grid are wrong for the other; caches from before "grid" was recorded hold
// E4M3 scales. quantize_fp8's report holds one under "calibration_cache".
#pragma once

#include <filesystem>

#include "quant/activation_scales.h"
#include "quant/quant_format.h"

namespace kiln {

inline constexpr const char* kCalibrationCacheFormat = "kiln-fp8-calibration";

// The scales by tensor. Fails naming the file and the key on invalid JSON, a missing or wrong "format",
// a "scales" or "channel_scales" that is not an object, a scale that is not a positive finite number, an
// empty list of channel scales, or a tensor in both. A cache of another grid than `grid` is refused too,
// and channel scales in a cache of the E4M3 grid. Whether a list's length matches its tensor's channels is
// the build's to check (quant/fp8_build.h), which knows the tensor's shape.
ActivationScales read_calibration_cache(const std::filesystem::path& path,
                                        QuantFormat grid = QuantFormat::kE4M3);

}  // namespace kiln
