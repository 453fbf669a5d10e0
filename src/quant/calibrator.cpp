// The four activation calibrators over an AbsHistogram (see calibrator.h).
//
// Entropy follows the INT8 entropy calibrator's recipe on the build's grid: 128 uniform levels for int8,
// the E4M3 levels for FP8. For a threshold of i bins (T = i * width, scale T / 448 or T / 127):
//   - P is bins [0, i) with all the mass at or beyond T added to bin i - 1 (what clipping does);
//   - Q maps each bin centre through fake quantization; consecutive bins that land on one grid level
//     form a group whose mass, taken from the unclipped bins [0, i) as in the INT8 recipe so that
//     clipping costs something, is shared equally among the group's bins that are non-empty in P;
//   - both are normalised; bins empty in P contribute nothing, and a bin non-empty in P but empty in Q
//     (the clipped mass landing where nothing else was) gets probability 1e-4 taken proportionally from
//     the rest of Q, the usual smoothing that keeps KL(P || Q) finite.
// Entropy tries thresholds up to the first bin edge at or above amax (as a histogram over [0, amax] would
// end): beyond it P stops changing and only the alignment of bin centres with the grid would vary.
//
// MSE is the expected squared error of fake quantization over the histogram, values above T clipped to
// T, with each bin's count spread uniformly over the bin rather than put at its centre: low bins are
// wider than the grid steps they hold, and a centre landing on or between levels would otherwise decide
// the outcome. It tries thresholds up to the histogram's whole range (< 2 * amax): a threshold a little
// above amax can place the largest values nearer the grid's levels.
//
// Both keep the smallest T of least cost among the candidates of CalibrationOptions.
#include "quant/calibrator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "quant/fake_quant.h"

namespace kiln {

namespace {

constexpr double kSmoothing = 1e-4;

float edge(const AbsHistogram& histogram, std::size_t bins) {
  return static_cast<float>(static_cast<double>(bins) * histogram.bin_width());
}

float centre(const AbsHistogram& histogram, std::size_t bin) {
  return static_cast<float>((static_cast<double>(bin) + 0.5) * histogram.bin_width());
}

float choose_percentile(const AbsHistogram& histogram, double percentile) {
  require(percentile > 0.0 && percentile <= 100.0, "calibration percentile ", percentile,
          " must be in (0, 100]");
  const double target = percentile / 100.0 * static_cast<double>(histogram.count());
  const auto& counts = histogram.counts();
  std::int64_t cumulative = 0;
  for (std::size_t bin = 0; bin < counts.size(); ++bin) {
    cumulative += counts[bin];
    if (static_cast<double>(cumulative) >= target)
      return std::min(edge(histogram, bin + 1), histogram.amax());
  }
  return histogram.amax();
}

// KL(P || Q) for a threshold of `bins` bins, as described at the top of this file.
double entropy_cost(const AbsHistogram& histogram, std::size_t bins, QuantFormat format) {
  const auto& counts = histogram.counts();
  std::vector<double> p(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(bins));
  for (std::size_t bin = bins; bin < counts.size(); ++bin) p[bins - 1] += static_cast<double>(counts[bin]);

  const float scale = edge(histogram, bins) / grid_max(format);
  std::vector<double> q(bins, 0.0);
  for (std::size_t first = 0; first < bins;) {
    const float level = round_to_grid(format, centre(histogram, first) / scale);
    std::size_t last = first;  // levels rise with the centre, so a group is a run of bins
    while (last + 1 < bins && round_to_grid(format, centre(histogram, last + 1) / scale) == level) ++last;
    double mass = 0.0;
    int non_empty = 0;
    for (std::size_t bin = first; bin <= last; ++bin) {
      mass += static_cast<double>(counts[bin]);
      non_empty += p[bin] > 0.0 ? 1 : 0;
    }
    for (std::size_t bin = first; bin <= last; ++bin) q[bin] = p[bin] > 0.0 ? mass / non_empty : 0.0;
    first = last + 1;
  }

  double p_total = 0.0;
  double q_total = 0.0;
  int starved = 0;  // non-empty in P, empty in Q
  for (std::size_t bin = 0; bin < bins; ++bin) {
    p_total += p[bin];
    q_total += q[bin];
    starved += p[bin] > 0.0 && q[bin] == 0.0 ? 1 : 0;
  }
  if (q_total == 0.0) return std::numeric_limits<double>::infinity();
  const double floor_q = std::min(kSmoothing, 0.5 / std::max(starved, 1));
  const double q_keep = 1.0 - floor_q * starved;
  double kl = 0.0;
  for (std::size_t bin = 0; bin < bins; ++bin) {
    if (p[bin] == 0.0) continue;
    const double pp = p[bin] / p_total;
    const double qq = q[bin] == 0.0 ? floor_q : q[bin] / q_total * q_keep;
    kl += pp * std::log(pp / qq);
  }
  return kl;
}

// Expected squared error with each bin's values spread uniformly over the bin: within a bin, fake
// quantization is a step function whose steps are the grid's levels (times scale) split at the midpoints
// between them, and the integral of (x - L)^2 over a piece [u, v] is w * ((m - L)^2 + w^2 / 12) with
// w = v - u and m its midpoint.
double mse_cost(const AbsHistogram& histogram, std::size_t bins, QuantFormat format) {
  const float scale = edge(histogram, bins) / grid_max(format);
  std::vector<double> level;
  for (const float grid_level : grid_levels(format)) level.push_back(static_cast<double>(grid_level * scale));
  const std::size_t top = level.size() - 1;
  const auto upper = [&](std::size_t code) {  // where rounding moves on to the next level
    return code == top ? std::numeric_limits<double>::infinity() : (level[code] + level[code + 1]) / 2.0;
  };

  const auto& counts = histogram.counts();
  const double width = histogram.bin_width();
  double error = 0.0;
  std::size_t code = 0;
  for (std::size_t bin = 0; bin < counts.size(); ++bin) {
    if (counts[bin] == 0) continue;
    const double low = static_cast<double>(bin) * width;
    const double high = low + width;
    while (upper(code) <= low) ++code;
    double integral = 0.0;
    for (double from = low; from < high;) {
      const double to = std::min(high, upper(code));
      const double piece = to - from;
      const double offset = (from + to) / 2.0 - level[code];
      integral += piece * (offset * offset + piece * piece / 12.0);
      from = to;
      if (to < high) ++code;
    }
    error += static_cast<double>(counts[bin]) * integral / width;
  }
  return error;
}

// The smallest candidate of least cost among thresholds of first, first + stride, ... bins up to `last`
// bins (which is always tried).
template <typename Cost>
float search(const AbsHistogram& histogram, const CalibrationOptions& options, std::size_t last, Cost cost) {
  require(options.min_threshold_divisor >= 1, "calibration min_threshold_divisor must be >= 1");
  const std::size_t total = histogram.bin_count();
  const std::size_t stride =
      options.search_stride != 0 ? options.search_stride : std::max<std::size_t>(1, total / 512);
  const std::size_t first = std::min(last, std::max<std::size_t>(1, total / options.min_threshold_divisor));
  std::size_t best_bins = last;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::size_t bins = first;; bins = std::min(bins + stride, last)) {
    const double candidate = cost(histogram, bins);
    if (candidate < best_cost) {
      best_cost = candidate;
      best_bins = bins;
    }
    if (bins == last) break;
  }
  return edge(histogram, best_bins);
}

// Bins up to and including the last non-empty one, whose upper edge is the first at or above amax.
std::size_t occupied_bins(const AbsHistogram& histogram) {
  const auto& counts = histogram.counts();
  std::size_t bins = counts.size();
  while (bins > 1 && counts[bins - 1] == 0) --bins;
  return bins;
}

}  // namespace

CalibrationResult choose_amax(const AbsHistogram& histogram, CalibrationMethod method,
                              const CalibrationOptions& options) {
  require(!histogram.empty(), "cannot calibrate ", calibration_method_name(method),
          ": no finite values observed (", histogram.nan_count(), " NaN, ", histogram.inf_count(),
          " infinite)");
  CalibrationResult result;
  if (histogram.amax() == 0.0f) {
    result.all_zero = true;
    result.scale = scale_for_amax(0.0f, options.format);
    return result;
  }
  switch (method) {
    case CalibrationMethod::kMax:
      result.amax = histogram.amax();
      break;
    case CalibrationMethod::kPercentile:
      result.amax = choose_percentile(histogram, options.percentile);
      break;
    case CalibrationMethod::kEntropy:
      result.amax = search(
          histogram, options, occupied_bins(histogram),
          [&](const AbsHistogram& h, std::size_t bins) { return entropy_cost(h, bins, options.format); });
      break;
    case CalibrationMethod::kMse:
      result.amax =
          search(histogram, options, histogram.bin_count(),
                 [&](const AbsHistogram& h, std::size_t bins) { return mse_cost(h, bins, options.format); });
      break;
  }
  result.scale = scale_for_amax(result.amax, options.format);
  return result;
}

}  // namespace kiln
