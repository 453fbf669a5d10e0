// AbsHistogram: one pass per observed span, exact growth by merging bin pairs (see histogram.h).
#include "quant/histogram.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln {

AbsHistogram::AbsHistogram(std::size_t bins, double base_width) : counts_(bins, 0), base_width_(base_width) {
  require(bins >= 2 && bins % 2 == 0, "histogram bin count ", bins, " must be even and at least 2");
  require(std::isnormal(base_width) && base_width > 0.0, "histogram base bin width ", base_width,
          " must be a positive normal number");
}

void AbsHistogram::observe(std::span<const float> values) {
  // First pass: the span's amax, so that the range grows at most once per call.
  float batch_amax = 0.0f;
  for (const float value : values) {
    if (std::isnan(value)) {
      ++nan_count_;
    } else if (std::isinf(value)) {
      ++inf_count_;
    } else {
      batch_amax = std::max(batch_amax, std::fabs(value));
    }
  }
  if (batch_amax > 0.0f) grow_to_cover(batch_amax);
  amax_ = std::max(amax_, batch_amax);

  // Second pass: bin every finite value. Before any non-zero value the width is 0 and all are zeros.
  const double width = width_;
  for (const float value : values) {
    if (!std::isfinite(value)) continue;
    const double magnitude = std::fabs(static_cast<double>(value));
    const auto bin = width == 0.0 ? std::size_t{0} : static_cast<std::size_t>(magnitude / width);
    ++counts_[bin];
    ++count_;
  }
}

// Makes floor(magnitude / width) < bins, using the same division that binning uses.
void AbsHistogram::grow_to_cover(double magnitude) {
  const auto bins = static_cast<double>(counts_.size());
  if (width_ == 0.0) {
    // The smallest base * 2^k that covers the first non-zero value; the bins hold only zeros so far.
    double width = std::ldexp(base_width_, std::ilogb(magnitude / (base_width_ * bins)));
    while (magnitude / width >= bins) width *= 2.0;
    while (magnitude / (width / 2.0) < bins) width /= 2.0;
    width_ = width;
    return;
  }
  while (magnitude / width_ >= bins) {
    const std::size_t half = counts_.size() / 2;
    for (std::size_t j = 0; j < half; ++j) counts_[j] = counts_[2 * j] + counts_[2 * j + 1];
    std::fill(counts_.begin() + static_cast<std::ptrdiff_t>(half), counts_.end(), 0);
    width_ *= 2.0;
  }
}

}  // namespace kiln
