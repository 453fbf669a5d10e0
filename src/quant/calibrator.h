// Per-tensor activation calibration for FP8 E4M3 or int8: choosing a clipping threshold T from an
// AbsHistogram of the values one tensor took on the calibration images. The scale is T / 448 (E4M3) or
// T / 127 (int8) (see quant/fake_quant.h for the quantization itself and for weight scales).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "quant/calibration_method.h"
#include "quant/histogram.h"
#include "quant/quant_format.h"

namespace kiln {

struct CalibrationOptions {
  QuantFormat format = QuantFormat::kE4M3;  // the grid thresholds are scored on and scales map to
  double percentile = 99.99;                // kPercentile: in (0, 100]
  // kEntropy and kMse try thresholds at bin upper edges from bin_count / min_threshold_divisor bins, every
  // search_stride bins (0: bin_count / 512, at least 1), up to the first edge at or above amax (kEntropy)
  // or the histogram's whole range (kMse).
  std::size_t min_threshold_divisor = 64;
  std::size_t search_stride = 0;
};

struct CalibrationResult {
  float amax = 0.0f;      // the chosen clipping threshold (0 when all_zero)
  float scale = 0.0f;     // scale_for_amax(amax): amax / 448 (127), and 1 / 448 (1 / 127) when all_zero
  bool all_zero = false;  // every finite value observed was zero: the scale is a safe placeholder
};

// Deterministic. Fails (kiln::Error) on a histogram that has seen no finite value; all zeros is not an
// error but gives all_zero. Entropy may pick a threshold up to one bin above amax and MSE up to the
// histogram's range (< 2 * amax) when that puts the largest values nearer the grid's levels.
CalibrationResult choose_amax(const AbsHistogram& histogram, CalibrationMethod method,
                              const CalibrationOptions& options = {});

}  // namespace kiln
