// A histogram of |x| over one activation tensor's values across a calibration set, built in one pass:
// observe() is called once per calibration image. Calibrators (quant/calibrator.h) choose a clipping
// threshold from it.
//
// The bin count is fixed and the bin width is base_width * 2^k. The first non-zero value fixes k (the
// smallest that covers it); whenever a larger value arrives, adjacent bin pairs merge and k grows until
// it fits. Bin j holds the values with floor(|x| / width) == j, and floor(floor(y) / 2) == floor(y / 2),
// so merging loses nothing: the result is exactly the histogram of all values at the final width, which
// depends only on the data's amax, never on the order it arrived in. The range (bins * width) always
// lies in (amax, 2 * amax]. NaN and +-inf are counted apart and kept out of the histogram and amax.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kiln {

class AbsHistogram {
 public:
  static constexpr std::size_t kDefaultBins = 2048;

  // bins >= 2 (and even, so that pairs merge); base_width > 0 and finite.
  explicit AbsHistogram(std::size_t bins = kDefaultBins, double base_width = 1.0);

  void observe(std::span<const float> values);

  std::int64_t count() const { return count_; }  // finite values observed, zeros included
  std::int64_t nan_count() const { return nan_count_; }
  std::int64_t inf_count() const { return inf_count_; }
  float amax() const { return amax_; }  // exact max |x| over finite values; 0 before any non-zero
  bool empty() const { return count_ == 0; }

  std::size_t bin_count() const { return counts_.size(); }
  // 0 until a non-zero value fixes the scale (all observed values then sit in bin 0).
  double bin_width() const { return width_; }
  double range() const { return width_ * static_cast<double>(counts_.size()); }
  const std::vector<std::int64_t>& counts() const { return counts_; }

 private:
  void grow_to_cover(double magnitude);

  std::vector<std::int64_t> counts_;
  double base_width_;
  double width_ = 0.0;
  float amax_ = 0.0f;
  std::int64_t count_ = 0;
  std::int64_t nan_count_ = 0;
  std::int64_t inf_count_ = 0;
};

}  // namespace kiln
