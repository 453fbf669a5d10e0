// Study statistics against values computed independently. The expected numbers come from a short
// Python 3 script written apart from this code (plain floats, no statistics package):
//  - Wilson: centre (p + z^2/2n) / (1 + z^2/n), half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n),
//    z = 1.959963984540054;
//  - McNemar: 2 * sum_{i <= min(b,c)} comb(b+c, i) / 2^(b+c) with math.comb, in exact integers;
//  - Newcombe's paired interval from the Wilson limits of the two margins and phi; the script's result
//    for the Cavo et al. (2012) table (59, 6, 16, 80) also matches the published -0.1186 to -0.0046;
//  - images to decide: the same script scanning n upwards one image at a time over the scaled table.
#include "eval/accuracy_statistics.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace kiln {
namespace {

constexpr double kTight = 1e-9;

TEST(WilsonInterval, MatchesIndependentValues) {
  const Interval i = wilson_interval(81, 100);
  EXPECT_DOUBLE_EQ(i.estimate, 0.81);
  EXPECT_NEAR(i.low, 0.722211546209, kTight);
  EXPECT_NEAR(i.high, 0.874852484902, kTight);
  const Interval big = wilson_interval(1950, 2000);
  EXPECT_NEAR(big.low, 0.967193228587, kTight);
  EXPECT_NEAR(big.high, 0.980985576496, kTight);
}

TEST(WilsonInterval, StaysInsideZeroToOneAndOpensAtTheEnds) {
  const Interval none = wilson_interval(0, 10);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_NEAR(none.high, 0.277532799863, kTight);
  const Interval all = wilson_interval(10, 10);
  EXPECT_NEAR(all.low, 0.722467200137, kTight);
  EXPECT_EQ(all.high, 1.0);
  const Interval empty = wilson_interval(0, 0);
  EXPECT_EQ(empty.low, 0.0);
  EXPECT_EQ(empty.high, 1.0);
  EXPECT_THROW(wilson_interval(11, 10), Error);
  EXPECT_THROW(wilson_interval(-1, 10), Error);
}

TEST(McNemarExact, MatchesTheBinomialSum) {
  EXPECT_NEAR(mcnemar_exact_p(10, 2), 0.03857421875, 1e-12);
  EXPECT_NEAR(mcnemar_exact_p(2, 10), 0.03857421875, 1e-12);
  EXPECT_NEAR(mcnemar_exact_p(30, 12), 0.00791589733489673, 1e-12);
  EXPECT_NEAR(mcnemar_exact_p(0, 7), 0.015625, 1e-12);
  EXPECT_EQ(mcnemar_exact_p(5, 5), 1.0);
  EXPECT_EQ(mcnemar_exact_p(0, 0), 1.0);
}

TEST(McNemarExact, HandlesMoreDiscordantImagesThanADoubleHoldsPowersOfTwo) {
  // 2^-2000 underflows; a balanced split must still give 1 and a lopsided one a tiny p.
  EXPECT_NEAR(mcnemar_exact_p(1000, 1000), 1.0, 1e-9);
  const double lopsided = mcnemar_exact_p(1100, 900);
  EXPECT_GT(lopsided, 0.0);
  EXPECT_LT(lopsided, 1e-4);
}

TEST(PairedDrop, MatchesNewcombeMethodTen) {
  const Interval cavo = paired_drop_interval({59, 6, 16, 80});
  EXPECT_NEAR(cavo.estimate, -0.062111801242, kTight);
  EXPECT_NEAR(cavo.low, -0.118621195639, kTight);
  EXPECT_NEAR(cavo.high, -0.004625113933, kTight);
  const Interval bentur = paired_drop_interval({1, 1, 7, 12});
  EXPECT_NEAR(bentur.low, -0.506920226686, kTight);
  EXPECT_NEAR(bentur.high, -0.025559124165, kTight);
  const Interval study_sized = paired_drop_interval({1700, 30, 12, 258});
  EXPECT_NEAR(study_sized.estimate, 0.009, kTight);
  EXPECT_NEAR(study_sized.low, 0.002524096113, kTight);
  EXPECT_NEAR(study_sized.high, 0.015633573011, kTight);
}

TEST(PairedDrop, NoDiscordantImageStillLeavesAnInterval) {
  const Interval same = paired_drop_interval({1900, 0, 0, 100});
  EXPECT_EQ(same.estimate, 0.0);
  EXPECT_NEAR(same.low, -0.001983766762, kTight);
  EXPECT_NEAR(same.high, 0.001983766762, kTight);
  const Interval empty_margin = paired_drop_interval({80, 20, 0, 0});
  EXPECT_NEAR(empty_margin.low, 0.123786585936, kTight);
  EXPECT_NEAR(empty_margin.high, 0.288829165593, kTight);
}

TEST(PairedCounts, PairImagesInOrder) {
  const std::vector<bool> baseline = {true, true, false, false, true};
  const std::vector<bool> variant = {true, false, true, false, false};
  const PairedCounts counts = count_pairs(baseline, variant);
  EXPECT_EQ(counts.both, 1);
  EXPECT_EQ(counts.baseline_only, 2);
  EXPECT_EQ(counts.variant_only, 1);
  EXPECT_EQ(counts.neither, 1);
  EXPECT_EQ(counts.images(), 5);
  EXPECT_EQ(counts.discordant(), 3);
  EXPECT_THROW(count_pairs({true, true, false, false}, variant), Error);
}

TEST(PairedComparison, CarriesBothRatesTheDropAndThePValue) {
  const PairedComparison c = compare_paired({1700, 30, 12, 258});
  EXPECT_NEAR(c.baseline_rate.estimate, 0.865, kTight);
  EXPECT_NEAR(c.variant_rate.estimate, 0.856, kTight);
  EXPECT_NEAR(c.drop.high, 0.015633573011, kTight);
  EXPECT_NEAR(c.mcnemar_p, 0.00791589733489673, 1e-12);
}

TEST(JudgeDrop, ThreeOutcomes) {
  EXPECT_EQ(judge_drop({0.0, -0.01, 0.005}, 0.01), DropVerdict::kWithin);
  EXPECT_EQ(judge_drop({0.0, -0.01, 0.01}, 0.01), DropVerdict::kWithin);
  EXPECT_EQ(judge_drop({0.03, 0.015, 0.05}, 0.01), DropVerdict::kBeyond);
  EXPECT_EQ(judge_drop({0.009, 0.0025, 0.0156}, 0.01), DropVerdict::kUndecided);
}

TEST(ImagesToDecide, MatchesAScanOverTheScaledTable) {
  // Already decided: the images at hand.
  EXPECT_EQ(images_to_decide({1960, 6, 4, 30}, 0.01), 2000);
  // The drop is clearly beyond the threshold once enough images narrow the interval.
  EXPECT_EQ(images_to_decide({190, 6, 2, 2}, 0.01), 1505);
  // The drop is small; more images bring the upper bound under the threshold.
  EXPECT_EQ(images_to_decide({180, 10, 6, 4}, 0.05), 393);
  // No discordant image yet: the interval still narrows with more images.
  EXPECT_EQ(images_to_decide({1900, 0, 0, 100}, 0.001), 3971);
}

TEST(ImagesToDecide, NeverWhenTheObservedDropIsTheThreshold) {
  EXPECT_FALSE(images_to_decide({100, 6, 2, 92}, 0.02).has_value());
  EXPECT_FALSE(images_to_decide({}, 0.01).has_value());
}

TEST(StudyStatistics, PValuesPrintWithoutRoundingToZero) {
  EXPECT_EQ(p_value_text(0.45), "= 0.450");
  EXPECT_EQ(p_value_text(0.0009), "< 0.001");
  EXPECT_EQ(p_value_text(1.0), "= 1.000");
}

}  // namespace
}  // namespace kiln
