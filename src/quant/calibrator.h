// Calibration: choosing the per-tensor FP8 E4M3 scale of each quantized layer's activation input from
// the values seen on calibration images, and the per-output-channel scales of its weights.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace kiln {

enum class CalibrationMethod : std::uint8_t {
  kMax,         // amax over all calibration values
  kPercentile,  // the given percentile of |x|
  kEntropy,     // minimum KL divergence between the |x| histogram and its E4M3-quantized form
  kMse,         // minimum mean squared error of E4M3 fake quantization over the histogram
};
std::string_view calibration_method_name(CalibrationMethod method);
std::optional<CalibrationMethod> calibration_method_from_name(std::string_view name);

struct CalibrationOptions {
  double percentile = 99.99;  // kPercentile only
};

// Everything a calibrator needs to know about one tensor's values across the calibration set:
// a running |x| maximum and a histogram of |x| (its range grows as larger values arrive).
class ActivationStats {
 public:
  void observe(std::span<const float> values);
  double amax() const;
  std::int64_t count() const;
  // Histogram of |x| over [0, amax()]: bin edges are uniform; bins().size() is the bin count.
  const std::vector<double>& bins() const;
  double bin_width() const;

 private:
  double amax_ = 0.0;
  std::int64_t count_ = 0;
  std::vector<double> bins_;
  double bin_width_ = 0.0;
};

// The activation scale (the clipping threshold / 448) for `stats` by `method`. Never zero: an
// all-zero tensor gets scale 1.
float activation_scale(const ActivationStats& stats, CalibrationMethod method, const CalibrationOptions& options = {});

// One scale per output channel (dimension 0) of a weight: amax of that channel / 448 (1 for an
// all-zero channel).
std::vector<float> weight_scales_per_channel(const Tensor& weight);

}  // namespace kiln
