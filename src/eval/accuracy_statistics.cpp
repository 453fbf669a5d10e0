#include "eval/accuracy_statistics.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"

namespace kiln {
namespace {

// The standard normal quantile for a two-sided 95% interval.
constexpr double kZ95 = 1.959963984540054;
constexpr std::int64_t kMostImagesToDecide = 100'000'000;

// Counts are real numbers here so that images_to_decide() can scale an observed table.
struct Table {
  double a = 0.0, b = 0.0, c = 0.0, d = 0.0;  // both, baseline only, variant only, neither
  double n() const { return a + b + c + d; }
};

Interval wilson(double successes, double trials) {
  if (trials <= 0.0) return {0.0, 0.0, 1.0};
  const double p = successes / trials;
  const double z2 = kZ95 * kZ95;
  const double denominator = 1.0 + z2 / trials;
  const double centre = (p + z2 / (2.0 * trials)) / denominator;
  const double half = kZ95 * std::sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator;
  // Rounding can put a bound a hair past the estimate at 0 or all successes.
  return {p, std::clamp(centre - half, 0.0, p), std::clamp(centre + half, p, 1.0)};
}

// Newcombe's phi: the correlation of the two paired outcomes, its numerator ad - bc shrunk towards
// zero by n/2 when positive (his continuity correction), zero when a margin is empty.
double paired_correlation(const Table& t) {
  const double margins = (t.a + t.b) * (t.c + t.d) * (t.a + t.c) * (t.b + t.d);
  if (margins <= 0.0) return 0.0;
  const double cross = t.a * t.d - t.b * t.c;
  double corrected = cross;
  if (cross > t.n() / 2.0) {
    corrected = cross - t.n() / 2.0;
  } else if (cross >= 0.0) {
    corrected = 0.0;
  }
  return corrected / std::sqrt(margins);
}

// Method 10: the Wilson intervals of the two marginal rates combined ("square and add"), the cross
// term weighted by phi because the two rates come from the same images.
Interval newcombe_paired(const Table& t) {
  const double n = t.n();
  if (n <= 0.0) return {0.0, -1.0, 1.0};
  const Interval baseline = wilson(t.a + t.b, n);
  const Interval variant = wilson(t.a + t.c, n);
  const double phi = paired_correlation(t);
  const double drop = (t.b - t.c) / n;
  const double base_down = baseline.estimate - baseline.low, base_up = baseline.high - baseline.estimate;
  const double var_down = variant.estimate - variant.low, var_up = variant.high - variant.estimate;
  const double below =
      std::sqrt(std::max(0.0, base_down * base_down - 2.0 * phi * base_down * var_up + var_up * var_up));
  const double above =
      std::sqrt(std::max(0.0, var_down * var_down - 2.0 * phi * var_down * base_up + base_up * base_up));
  return {drop, std::max(-1.0, drop - below), std::min(1.0, drop + above)};
}

Table table_of(const PairedCounts& counts) {
  return {static_cast<double>(counts.both), static_cast<double>(counts.baseline_only),
          static_cast<double>(counts.variant_only), static_cast<double>(counts.neither)};
}

// The observed table scaled to `images` images.
Table scaled(const Table& t, double images) {
  const double k = images / t.n();
  return {t.a * k, t.b * k, t.c * k, t.d * k};
}

bool decided_at(const Table& observed, double images, double max_drop) {
  return judge_drop(newcombe_paired(scaled(observed, images)), max_drop) != DropVerdict::kUndecided;
}

}  // namespace

Interval wilson_interval(std::int64_t successes, std::int64_t trials) {
  require(trials >= 0 && successes >= 0 && successes <= trials, "a proportion needs 0 <= successes (",
          successes, ") <= trials (", trials, ")");
  return wilson(static_cast<double>(successes), static_cast<double>(trials));
}

PairedCounts count_pairs(const std::vector<bool>& baseline, const std::vector<bool>& variant) {
  require(baseline.size() == variant.size(), "paired results need the same images: the baseline has ",
          baseline.size(), ", the variant ", variant.size());
  PairedCounts counts;
  for (std::size_t i = 0; i < baseline.size(); ++i) {
    if (baseline[i] && variant[i]) {
      ++counts.both;
    } else if (baseline[i]) {
      ++counts.baseline_only;
    } else if (variant[i]) {
      ++counts.variant_only;
    } else {
      ++counts.neither;
    }
  }
  return counts;
}

Interval paired_drop_interval(const PairedCounts& counts) {
  require(counts.both >= 0 && counts.baseline_only >= 0 && counts.variant_only >= 0 && counts.neither >= 0,
          "paired counts cannot be negative");
  return newcombe_paired(table_of(counts));
}

std::string p_value_text(double p) {
  if (p < 0.001) return "< 0.001";
  std::ostringstream text;
  text << "= " << std::fixed << std::setprecision(3) << p;
  return text.str();
}

double mcnemar_exact_p(std::int64_t baseline_only, std::int64_t variant_only) {
  require(baseline_only >= 0 && variant_only >= 0, "discordant counts cannot be negative");
  const std::int64_t n = baseline_only + variant_only;
  if (n == 0) return 1.0;
  const std::int64_t k = std::min(baseline_only, variant_only);
  // In logs: 2^-n underflows a double past n = 1074 discordant images.
  const double log_n_factorial = std::lgamma(static_cast<double>(n) + 1.0);
  const double log_half_power = static_cast<double>(n) * std::log(0.5);
  double tail = 0.0;
  for (std::int64_t i = 0; i <= k; ++i) {
    const double log_choose = log_n_factorial - std::lgamma(static_cast<double>(i) + 1.0) -
                              std::lgamma(static_cast<double>(n - i) + 1.0);
    tail += std::exp(log_choose + log_half_power);
  }
  return std::min(1.0, 2.0 * tail);
}

PairedComparison compare_paired(const PairedCounts& counts) {
  PairedComparison comparison;
  comparison.counts = counts;
  comparison.baseline_rate = wilson_interval(counts.both + counts.baseline_only, counts.images());
  comparison.variant_rate = wilson_interval(counts.both + counts.variant_only, counts.images());
  comparison.drop = paired_drop_interval(counts);
  comparison.mcnemar_p = mcnemar_exact_p(counts.baseline_only, counts.variant_only);
  return comparison;
}

DropVerdict judge_drop(const Interval& drop, double max_drop) {
  if (drop.high <= max_drop) return DropVerdict::kWithin;
  if (drop.low > max_drop) return DropVerdict::kBeyond;
  return DropVerdict::kUndecided;
}

std::optional<std::int64_t> images_to_decide(const PairedCounts& counts, double max_drop) {
  const Table observed = table_of(counts);
  if (counts.images() <= 0) return std::nullopt;
  if (judge_drop(paired_drop_interval(counts), max_drop) != DropVerdict::kUndecided) return counts.images();
  // Intervals narrow as images are added: double until one decides, then bisect.
  std::int64_t undecided = counts.images();
  std::int64_t decided = undecided;
  do {
    decided = std::min(2 * decided, kMostImagesToDecide);
    if (decided_at(observed, static_cast<double>(decided), max_drop)) break;
    undecided = decided;
  } while (decided < kMostImagesToDecide);
  if (undecided == decided) return std::nullopt;
  while (decided - undecided > 1) {
    const std::int64_t middle = undecided + (decided - undecided) / 2;
    (decided_at(observed, static_cast<double>(middle), max_drop) ? decided : undecided) = middle;
  }
  return decided;
}

}  // namespace kiln
