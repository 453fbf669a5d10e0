// A calibration cache: the activation scale of every observed tensor, as JSON
// {"format": "kiln-fp8-calibration", "grid": "fp8-e4m3" | "int8", "calibration": METHOD,
//  "data": {..., "fingerprint": SHA256}, "scales": {TENSOR: SCALE, ...}} (data: the images it was
// calibrated on, calibration_images.h). A scale maps its threshold to the grid's top, so scales of one
// grid are wrong for the other; caches from before "grid" was recorded hold E4M3 scales.
// quantize_fp8's report holds one under "calibration_cache".
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "quant/quant_format.h"

namespace kiln {

inline constexpr const char* kCalibrationCacheFormat = "kiln-fp8-calibration";

// The scales by tensor. Fails naming the file and the key on invalid JSON, a missing or wrong "format",
// a "scales" that is not an object, or a scale that is not a positive finite number.
// A cache of another grid than `grid` is refused too.
std::map<std::string, float> read_calibration_cache(const std::filesystem::path& path,
                                                    QuantFormat grid = QuantFormat::kE4M3);

}  // namespace kiln
