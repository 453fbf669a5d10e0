// Statistics for accuracy figures (kiln eval against a reference, kiln study), all at 95% confidence:
//  - a proportion (top-1 against labels, top-1 agreement with the fp32 build) with its Wilson score
//    interval;
//  - a variant against the baseline on the same images: the paired difference of their rates (the
//    "drop", baseline minus variant) with Newcombe's hybrid score interval for paired data, and the
//    exact McNemar test on the discordant images;
//  - how many images would let the drop's interval settle a threshold, if the observed rates held.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// An estimate with its 95% interval, low <= estimate <= high.
struct Interval {
  double estimate = 0.0;
  double low = 0.0;
  double high = 0.0;
};

// The two-sided 95% Wilson score interval for `successes` out of `trials`. Unlike the normal
// approximation it stays inside [0, 1] and does not collapse to a point at 0 or `trials` successes,
// which matters for accuracies near 100%. With no trial: {0, 0, 1}, nothing known. Fails unless
// 0 <= successes <= trials.
Interval wilson_interval(std::int64_t successes, std::int64_t trials);

// A baseline and a variant scored on the same images, each image a success or not for each.
struct PairedCounts {
  std::int64_t both = 0;           // the baseline and the variant succeed
  std::int64_t baseline_only = 0;  // the baseline succeeds, the variant fails
  std::int64_t variant_only = 0;   // the variant succeeds, the baseline fails
  std::int64_t neither = 0;
  std::int64_t images() const { return both + baseline_only + variant_only + neither; }
  std::int64_t discordant() const { return baseline_only + variant_only; }
};

// Pairs image i of `baseline` with image i of `variant`; fails when their lengths differ.
PairedCounts count_pairs(const std::vector<bool>& baseline, const std::vector<bool>& variant);

// The drop, baseline rate minus variant rate = (baseline_only - variant_only) / images, with its 95%
// interval by Newcombe's hybrid score method for paired proportions (method 10 of Newcombe 1998,
// "Improved confidence intervals for the difference between binomial proportions based on paired
// data"). Why this one: it is closed-form and deterministic (the same study gives the same report, no
// seed); built from Wilson intervals it keeps good coverage at rates near 100% and with few or no
// discordant images, where the Wald interval collapses to a point and a bootstrap of the pairs has
// nothing to resample; and its phi term counts the pairing (the two rates come from the same images),
// which an interval for independent samples would ignore and so make too wide. No image: {0, -1, 1}.
Interval paired_drop_interval(const PairedCounts& counts);

// The exact two-sided McNemar p-value: under "no difference" each discordant image is equally likely
// to favour either side, so min(b, c) is Binomial(b + c, 1/2); p = min(1, 2 P(X <= min(b, c))).
// 1 with no discordant image.
double mcnemar_exact_p(std::int64_t baseline_only, std::int64_t variant_only);

// A p-value as a report prints it after "p ": "= 0.450", or "< 0.001" below that (never a bare 0.00).
std::string p_value_text(double p);

struct PairedComparison {
  PairedCounts counts;
  Interval baseline_rate;  // Wilson
  Interval variant_rate;   // Wilson
  Interval drop;           // paired_drop_interval
  double mcnemar_p = 1.0;
};

PairedComparison compare_paired(const PairedCounts& counts);

// Where a drop's interval lies against the largest drop allowed.
enum class DropVerdict {
  kWithin,     // high <= max_drop: the drop is at most max_drop (95%)
  kBeyond,     // low > max_drop: the drop exceeds max_drop (95%)
  kUndecided,  // the interval straddles max_drop
};

DropVerdict judge_drop(const Interval& drop, double max_drop);

// The fewest images at which, with the observed shares of the four kinds of image held fixed, the
// drop's interval would lie on one side of max_drop: `counts.images()` when it already does, nothing
// when it never would (the observed drop equals max_drop) or would need more than a hundred million.
std::optional<std::int64_t> images_to_decide(const PairedCounts& counts, double max_drop);

}  // namespace kiln
