// A calibration cache: the activation scale of every observed tensor, as JSON
// {"format": "kiln-fp8-calibration", "calibration": METHOD, "data": {..., "fingerprint": SHA256},
//  "scales": {TENSOR: SCALE, ...}} (data: the images it was calibrated on, calibration_images.h).
// quantize_fp8's report holds one under "calibration_cache".
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace kiln {

inline constexpr const char* kCalibrationCacheFormat = "kiln-fp8-calibration";

// The scales by tensor. Fails naming the file and the key on invalid JSON, a missing or wrong "format",
// a "scales" that is not an object, or a scale that is not a positive finite number.
std::map<std::string, float> read_calibration_cache(const std::filesystem::path& path);

}  // namespace kiln
