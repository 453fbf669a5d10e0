#include "eval/metrics.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "eval/top_k.h"

namespace kiln {

double relative_error_from_sums(double sum_sq_diff, double sum_sq_ref) {
  if (std::isnan(sum_sq_diff) || std::isnan(sum_sq_ref)) return std::numeric_limits<double>::quiet_NaN();
  if (sum_sq_ref == 0.0) return sum_sq_diff == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(sum_sq_diff) / std::sqrt(sum_sq_ref);
}

// NaN is the largest error: a comparison that has gone NaN must not look better than any other.
bool error_greater(double a, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a > b;
}

NonFiniteCount count_non_finite(std::span<const float> values) {
  NonFiniteCount count;
  for (const float value : values) {
    if (std::isnan(value)) {
      ++count.nan;
    } else if (std::isinf(value)) {
      ++count.inf;
    }
  }
  return count;
}

std::int64_t top1_class(std::span<const float> logits) {
  require(!logits.empty(), "top-1 of an empty set of logits");
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (ranks_above(logits[i], i, logits[best], best)) best = i;
  }
  return static_cast<std::int64_t>(best);
}

std::int64_t rank_of(std::span<const float> logits, std::int64_t label) {
  require(label >= 0 && static_cast<std::size_t>(label) < logits.size(), "label ", label,
          " is out of range for ", logits.size(), " classes");
  const auto target = static_cast<std::size_t>(label);
  std::int64_t above = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (i != target && ranks_above(logits[i], i, logits[target], target)) ++above;
  }
  return above;
}

void LabelMetrics::add(std::span<const float> logits, std::int64_t label) {
  const std::int64_t rank = rank_of(logits, label);
  ++images_;
  if (rank == 0) ++top1_;
  if (rank < 5) ++top5_;
}

double LabelMetrics::top1() const {
  return images_ == 0 ? 0.0 : static_cast<double>(top1_) / static_cast<double>(images_);
}
double LabelMetrics::top5() const {
  return images_ == 0 ? 0.0 : static_cast<double>(top5_) / static_cast<double>(images_);
}

void ReferenceMetrics::add(std::span<const float> logits, std::span<const float> reference,
                           const std::string& image) {
  require(logits.size() == reference.size(), "the engine gives ", logits.size(),
          " logits per image but the reference ", reference.size());
  double diff = 0.0;
  double ref = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double d = static_cast<double>(logits[i]) - static_cast<double>(reference[i]);
    diff += d * d;
    ref += static_cast<double>(reference[i]) * reference[i];
    const double abs = std::fabs(d);
    if (error_greater(abs, max_abs_error_)) max_abs_error_ = abs;
  }
  sum_sq_diff_ += diff;
  sum_sq_ref_ += ref;
  const double error = relative_error_from_sums(diff, ref);
  if (images_ == 0 || error_greater(error, max_image_error_)) {
    max_image_error_ = error;
    worst_image_ = image;
  }
  ++images_;
  if (top1_class(logits) == top1_class(reference)) ++agreements_;
}

double ReferenceMetrics::agreement() const {
  return images_ == 0 ? 0.0 : static_cast<double>(agreements_) / static_cast<double>(images_);
}

double ReferenceMetrics::relative_error() const {
  return relative_error_from_sums(sum_sq_diff_, sum_sq_ref_);
}

double relative_l2_error(std::span<const float> y, std::span<const float> reference) {
  require(y.size() == reference.size(), "relative error of tensors of ", y.size(), " and ", reference.size(),
          " elements");
  double diff = 0.0;
  double ref = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double d = static_cast<double>(y[i]) - static_cast<double>(reference[i]);
    diff += d * d;
    ref += static_cast<double>(reference[i]) * reference[i];
  }
  return relative_error_from_sums(diff, ref);
}

}  // namespace kiln
