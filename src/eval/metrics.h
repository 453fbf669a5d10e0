// Accuracy metrics for evaluating an engine, accumulated image by image in double so that results do
// not depend on how images are batched:
//  - top-1 / top-5 against dataset labels;
//  - top-1 agreement with a reference engine's logits and the relative error
//    ||y - ref|| / ||ref|| over all images (sqrt of summed squared differences over sqrt of summed
//    squared reference values), with the largest per-image relative error beside it;
//  - counts of NaN and infinite outputs.
//
// Ranking is deterministic: larger logits rank first, equal logits rank by lower class index, and a NaN
// ranks below every number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kiln {

struct NonFiniteCount {
  std::int64_t nan = 0;
  std::int64_t inf = 0;
  std::int64_t total() const { return nan + inf; }
  NonFiniteCount& operator+=(const NonFiniteCount& other) {
    nan += other.nan;
    inf += other.inf;
    return *this;
  }
};

NonFiniteCount count_non_finite(std::span<const float> values);

// The class ranked first in `logits` (see the ranking rule above). Fails on an empty span.
std::int64_t top1_class(std::span<const float> logits);
// How many classes rank above `label`: 0 means top-1, fewer than 5 means top-5.
std::int64_t rank_of(std::span<const float> logits, std::int64_t label);

// Top-k accuracy against labels.
class LabelMetrics {
 public:
  // One image's logits and its label, which must index `logits`.
  void add(std::span<const float> logits, std::int64_t label);
  std::int64_t images() const { return images_; }
  std::int64_t top1_correct() const { return top1_; }
  std::int64_t top5_correct() const { return top5_; }
  double top1() const;  // fraction in [0, 1]; 0 with no image
  double top5() const;

 private:
  std::int64_t images_ = 0;
  std::int64_t top1_ = 0;
  std::int64_t top5_ = 0;
};

// Agreement with a reference: top-1 agreement and relative L2 error.
class ReferenceMetrics {
 public:
  // One image's logits and the reference's logits for it; `image` names it in worst_image().
  void add(std::span<const float> logits, std::span<const float> reference, const std::string& image = {});
  std::int64_t images() const { return images_; }
  std::int64_t top1_agreements() const { return agreements_; }
  double agreement() const;       // fraction in [0, 1]; 0 with no image
  double relative_error() const;  // sqrt(sum (y - ref)^2) / sqrt(sum ref^2) over every image; NaN if any is
  double max_image_relative_error() const { return max_image_error_; }
  const std::string& worst_image() const { return worst_image_; }  // where the largest per-image error is
  double max_abs_error() const { return max_abs_error_; }
  double sum_squared_difference() const { return sum_sq_diff_; }
  double sum_squared_reference() const { return sum_sq_ref_; }

 private:
  std::int64_t images_ = 0;
  std::int64_t agreements_ = 0;
  double sum_sq_diff_ = 0.0;
  double sum_sq_ref_ = 0.0;
  double max_image_error_ = 0.0;
  double max_abs_error_ = 0.0;
  std::string worst_image_;
};

// sqrt(sum_sq_diff) / sqrt(sum_sq_ref), with the conventions of relative_l2_error below.
double relative_error_from_sums(double sum_sq_diff, double sum_sq_ref);
// Orders errors for reports: true when a is larger than b, where NaN is larger than anything.
bool error_greater(double a, double b);

// ||y - ref|| / ||ref|| of one pair of tensors, in double. 0 when both are zero, infinity when only the
// reference is, NaN when either holds a NaN.
double relative_l2_error(std::span<const float> y, std::span<const float> reference);

}  // namespace kiln
