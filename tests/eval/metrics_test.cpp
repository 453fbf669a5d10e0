// The evaluation metrics on hand-made logits, where every answer is known.
#include "eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace kiln {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(EvalMetrics, Top1BreaksTiesByLowerIndexAndRanksNaNLast) {
  EXPECT_EQ(top1_class(std::vector<float>{0.1f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(top1_class(std::vector<float>{5.0f, 1.0f, 5.0f}), 0);
  EXPECT_EQ(top1_class(std::vector<float>{kNaN, -1.0f, kNaN}), 1);
  EXPECT_EQ(top1_class(std::vector<float>{-kInf, kNaN}), 0);
  EXPECT_EQ(top1_class(std::vector<float>{kNaN, kNaN}), 0);
  EXPECT_THROW(top1_class(std::vector<float>{}), Error);
}

TEST(EvalMetrics, RankCountsTheClassesAbove) {
  const std::vector<float> logits{0.5f, 0.9f, 0.1f, 0.9f, 0.7f, 0.2f, 0.3f};
  EXPECT_EQ(rank_of(logits, 1), 0);
  EXPECT_EQ(rank_of(logits, 3), 1);  // tied with class 1, which has the lower index
  EXPECT_EQ(rank_of(logits, 4), 2);
  EXPECT_EQ(rank_of(logits, 2), 6);
  EXPECT_THROW(rank_of(logits, 7), Error);
  EXPECT_THROW(rank_of(logits, -1), Error);
}

TEST(EvalMetrics, TopOneAndTopFiveAgainstLabels) {
  LabelMetrics metrics;
  const std::vector<float> logits{0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f};  // order 7, 6, 5, ...
  metrics.add(logits, 7);                                                           // top-1
  metrics.add(logits, 3);                                                           // rank 4: top-5
  metrics.add(logits, 2);                                                           // rank 5: neither
  metrics.add(logits, 6);                                                           // rank 1: top-5
  EXPECT_EQ(metrics.images(), 4);
  EXPECT_EQ(metrics.top1_correct(), 1);
  EXPECT_EQ(metrics.top5_correct(), 3);
  EXPECT_DOUBLE_EQ(metrics.top1(), 0.25);
  EXPECT_DOUBLE_EQ(metrics.top5(), 0.75);
  EXPECT_DOUBLE_EQ(LabelMetrics{}.top1(), 0.0);
  // With fewer than five classes every label is in the top 5.
  LabelMetrics few;
  few.add(std::vector<float>{1.0f, 2.0f, 3.0f}, 0);
  EXPECT_EQ(few.top5_correct(), 1);
}

TEST(EvalMetrics, AgreementAndRelativeErrorOverImages) {
  ReferenceMetrics metrics;
  // Image a: same top-1, difference (0, 0, 1) against reference (3, 4, 0): ||d||^2 = 1, ||ref||^2 = 25.
  metrics.add(std::vector<float>{3.0f, 4.0f, 1.0f}, std::vector<float>{3.0f, 4.0f, 0.0f}, "a");
  // Image b: top-1 changes, difference (0, 0, 3) against reference (1, 0, 0): per-image error 3.
  metrics.add(std::vector<float>{1.0f, 0.0f, 3.0f}, std::vector<float>{1.0f, 0.0f, 0.0f}, "b");
  EXPECT_EQ(metrics.images(), 2);
  EXPECT_EQ(metrics.top1_agreements(), 1);
  EXPECT_DOUBLE_EQ(metrics.agreement(), 0.5);
  EXPECT_DOUBLE_EQ(metrics.sum_squared_difference(), 10.0);
  EXPECT_DOUBLE_EQ(metrics.sum_squared_reference(), 26.0);
  EXPECT_DOUBLE_EQ(metrics.relative_error(), std::sqrt(10.0) / std::sqrt(26.0));
  EXPECT_DOUBLE_EQ(metrics.max_image_relative_error(), 3.0);
  EXPECT_EQ(metrics.worst_image(), "b");
  EXPECT_DOUBLE_EQ(metrics.max_abs_error(), 3.0);
}

TEST(EvalMetrics, IdenticalLogitsAgreeExactly) {
  ReferenceMetrics metrics;
  const std::vector<float> logits{-2.0f, 0.5f, 7.0f};
  for (int i = 0; i < 3; ++i) metrics.add(logits, logits);
  EXPECT_DOUBLE_EQ(metrics.agreement(), 1.0);
  EXPECT_EQ(metrics.relative_error(), 0.0);
  EXPECT_EQ(metrics.max_abs_error(), 0.0);
}

TEST(EvalMetrics, NaNMakesTheErrorNaNAndIsCounted) {
  const std::vector<float> logits{1.0f, kNaN, kInf, -kInf, kNaN, 0.0f};
  const NonFiniteCount count = count_non_finite(logits);
  EXPECT_EQ(count.nan, 2);
  EXPECT_EQ(count.inf, 2);
  EXPECT_EQ(count.total(), 4);
  ReferenceMetrics metrics;
  metrics.add(std::vector<float>{1.0f, 2.0f}, std::vector<float>{1.0f, 2.0f}, "fine");
  metrics.add(std::vector<float>{kNaN, 2.0f}, std::vector<float>{1.0f, 2.0f}, "broken");
  EXPECT_TRUE(std::isnan(metrics.relative_error()));
  EXPECT_TRUE(std::isnan(metrics.max_image_relative_error()));
  EXPECT_EQ(metrics.worst_image(), "broken");
  EXPECT_EQ(metrics.top1_agreements(), 2);  // NaN ranks last, so class 1 is top-1 in both
}

TEST(EvalMetrics, RelativeErrorConventions) {
  EXPECT_EQ(relative_l2_error(std::vector<float>{0.0f}, std::vector<float>{0.0f}), 0.0);
  EXPECT_TRUE(std::isinf(relative_l2_error(std::vector<float>{1.0f}, std::vector<float>{0.0f})));
  EXPECT_DOUBLE_EQ(relative_l2_error(std::vector<float>{2.0f, 0.0f}, std::vector<float>{1.0f, 0.0f}), 1.0);
  EXPECT_THROW(relative_l2_error(std::vector<float>{1.0f}, std::vector<float>{1.0f, 2.0f}), Error);
  EXPECT_TRUE(error_greater(std::nan(""), 1e30));
  EXPECT_FALSE(error_greater(1e30, std::nan("")));
  EXPECT_TRUE(error_greater(2.0, 1.0));
}

}  // namespace
}  // namespace kiln
