// The one ranking of scores and logits: larger first, ties by lower index, NaN below every number.
#include "eval/top_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kiln {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

using Indices = std::vector<std::int64_t>;

TEST(TopK, LargestFirstWithTiesByLowerIndex) {
  const std::vector<float> values{0.5f, 2.0f, -1.0f, 2.0f, 0.5f, 3.0f};
  EXPECT_EQ(top_k_indices(values, 6), (Indices{5, 1, 3, 0, 4, 2}));
  EXPECT_EQ(top_k_indices(values, 3), (Indices{5, 1, 3}));
}

TEST(TopK, NaNRanksBelowEveryNumberAndInfinitiesRankAsNumbers) {
  const std::vector<float> values{kNaN, 1.0f, -kInf, kNaN, kInf, -2.0f, kNaN};
  EXPECT_EQ(top_k_indices(values, 7), (Indices{4, 1, 5, 2, 0, 3, 6}));
  EXPECT_EQ(top_k_indices(values, 2), (Indices{4, 1}));
  EXPECT_EQ(top_k_indices(std::vector<float>{kNaN, kNaN}, 2), (Indices{0, 1}));
}

TEST(TopK, KLargerThanTheValuesOrZero) {
  const std::vector<float> values{1.0f, 3.0f};
  EXPECT_EQ(top_k_indices(values, 10), (Indices{1, 0}));
  EXPECT_TRUE(top_k_indices(values, 0).empty());
  EXPECT_TRUE(top_k_indices(std::vector<float>{}, 3).empty());
  EXPECT_TRUE(top_k_classes(values, 0).empty());
}

TEST(TopK, RanksAboveIsAStrictWeakOrderingWithNaN) {
  const std::vector<float> values{kNaN, 1.0f, 1.0f, -kInf, kInf, kNaN};
  for (std::size_t a = 0; a < values.size(); ++a) {
    EXPECT_FALSE(ranks_above(values[a], a, values[a], a)) << a;  // irreflexive
    for (std::size_t b = 0; b < values.size(); ++b) {
      if (a == b) continue;
      // Distinct indices are never tied, so exactly one of the pair ranks above the other.
      EXPECT_NE(ranks_above(values[a], a, values[b], b), ranks_above(values[b], b, values[a], a)) << a << b;
      for (std::size_t c = 0; c < values.size(); ++c) {
        if (ranks_above(values[a], a, values[b], b) && ranks_above(values[b], b, values[c], c)) {
          EXPECT_TRUE(ranks_above(values[a], a, values[c], c)) << a << b << c;  // transitive
        }
      }
    }
  }
}

TEST(TopK, ClassesCarryLogitAndSoftmaxProbability) {
  const std::vector<float> logits{0.0f, std::log(3.0f), 0.0f};  // softmax 0.2, 0.6, 0.2
  const auto ranked = top_k_classes(logits, 2);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].index, 1);
  EXPECT_NEAR(ranked[0].probability, 0.6, 1e-6);
  EXPECT_DOUBLE_EQ(ranked[0].logit, static_cast<double>(std::log(3.0f)));
  EXPECT_EQ(ranked[1].index, 0);
  EXPECT_NEAR(ranked[1].probability, 0.2, 1e-6);
}

// fp16 overflow turns logits into NaN: the finite classes keep their order, the NaN comes last, and the
// probabilities say the softmax is undefined instead of inventing one.
TEST(TopK, ANaNLogitDoesNotReorderTheFiniteOnes) {
  std::vector<float> logits(1000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 1000) / 100.0f;
  const auto clean = top_k_indices(logits, 5);
  logits[static_cast<std::size_t>(clean[0])] = kNaN;
  for (std::size_t i = 0; i < logits.size(); i += 97) logits[i] = kNaN;
  const auto ranked = top_k_classes(logits, 1000);
  ASSERT_EQ(ranked.size(), 1000u);
  std::size_t first_nan = 0;
  while (first_nan < ranked.size() && !std::isnan(ranked[first_nan].logit)) ++first_nan;
  for (std::size_t i = first_nan; i < ranked.size(); ++i) EXPECT_TRUE(std::isnan(ranked[i].logit)) << i;
  for (std::size_t i = 1; i < first_nan; ++i) EXPECT_GE(ranked[i - 1].logit, ranked[i].logit) << i;
  EXPECT_EQ(ranked[0].index, clean[1]);
  EXPECT_TRUE(std::isnan(ranked[0].probability));
}

}  // namespace
}  // namespace kiln
