// The study's decision on constructed results: ship, do not ship and cannot tell, per variant and
// overall, from the paired statistics of held-out images.
#include "study/study_decision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "study/study_runner.h"

namespace kiln {
namespace {

constexpr std::int64_t kImages = 2000;

// Per-image outcomes where fp32 and the labels agree (class 0 on every image): an engine is right, and
// agrees with fp32, where its top-1 is 0. `wrong` lists the images it gets wrong.
EvalResult eval_wrong_on(const std::vector<std::int64_t>& wrong, bool labelled = true) {
  EvalResult eval;
  if (labelled) eval.labels.emplace();
  eval.reference.emplace();
  std::vector<bool> is_wrong(kImages, false);
  for (const std::int64_t i : wrong) is_wrong[static_cast<std::size_t>(i)] = true;
  for (std::int64_t i = 0; i < kImages; ++i) {
    const bool w = is_wrong[static_cast<std::size_t>(i)];
    eval.per_image.push_back({static_cast<std::size_t>(i), cat("image", i), w ? 1 : 0, labelled ? 0 : -1, 0});
    const std::vector<float> logits = w ? std::vector<float>{0.0f, 1.0f} : std::vector<float>{1.0f, 0.0f};
    const std::vector<float> reference = {1.0f, 0.0f};
    eval.reference->add(logits, reference);
  }
  eval.images_evaluated = static_cast<std::size_t>(kImages);
  return eval;
}

// The images [from, from + count).
std::vector<std::int64_t> range(std::int64_t from, std::int64_t count) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = from; i < from + count; ++i) out.push_back(i);
  return out;
}

std::vector<std::int64_t> joined(std::vector<std::int64_t> a, const std::vector<std::int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

VariantResult variant(const std::string& name, Precision precision, EvalResult eval, Spread speedup) {
  VariantResult r;
  r.variant.name = name;
  r.variant.precision = precision;
  r.eval = std::move(eval);
  r.speedup = speedup;
  return r;
}

// The baseline is wrong on images 0..99 (95% top-1). This variant is also wrong on `extra_wrong`
// images the baseline gets right (100, 101, ...) and right on `fixed` of the baseline's mistakes
// (0, 1, ...): extra_wrong images favour the baseline, `fixed` the variant.
EvalResult variant_eval(std::int64_t extra_wrong, std::int64_t fixed, bool labelled = true) {
  return eval_wrong_on(joined(range(fixed, 100 - fixed), range(100, extra_wrong)), labelled);
}

StudySpec spec_for_tests() {
  StudySpec spec;
  spec.baseline = "fp16";
  spec.min_speedup = 1.05;
  spec.max_agreement_drop = 0.01;
  spec.max_top1_drop = 0.01;
  return spec;
}

StudyDecision decide_on(std::vector<VariantResult> results, const StudySpec& spec = spec_for_tests(),
                        bool timings_sound = true) {
  results.insert(results.begin(),
                 variant("fp16", Precision::kF16, eval_wrong_on(range(0, 100)), {1.0, 1.0, 1.0}));
  attach_statistics(spec, results);
  return decide(spec, results, timings_sound);
}

bool any_reason_has(const VariantVerdict& verdict, const std::string& text) {
  for (const std::string& reason : verdict.reasons) {
    if (reason.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(StudyDecision, ShipsWhenFastAndTheDropsUpperBoundsAreWithinThresholds) {
  // 4 images lost, 2 gained: drop 0.1 points, 95% upper bound about 0.4 < 1.
  const StudyDecision d =
      decide_on({variant("fp8 a", Precision::kF8, variant_eval(4, 2), {1.3, 1.25, 1.35})});
  ASSERT_EQ(d.verdicts.size(), 1u);
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kShip);
  EXPECT_EQ(d.outcome, ShipOutcome::kShip);
  EXPECT_TRUE(d.ship_fp8);
  EXPECT_EQ(d.variant, "fp8 a");
  EXPECT_TRUE(d.labelled);
  EXPECT_EQ(d.held_out_images, kImages);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "top-1 against labels"));
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "upper bound is within"));
}

TEST(StudyDecision, DoesNotShipWhenTheDropsLowerBoundExceedsTheThreshold) {
  // 80 lost, 10 gained: drop 3.5 points, 95% lower bound above 1.
  const StudyDecision d =
      decide_on({variant("fp8 a", Precision::kF8, variant_eval(80, 10), {1.3, 1.25, 1.35})});
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kDoNotShip);
  EXPECT_EQ(d.outcome, ShipOutcome::kDoNotShip);
  EXPECT_FALSE(d.ship_fp8);
  EXPECT_FALSE(d.images_needed.has_value());
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "lower bound exceeds"));
}

TEST(StudyDecision, DoesNotShipWhenTooSlowWhateverTheAccuracy) {
  const StudyDecision d =
      decide_on({variant("fp8 a", Precision::kF8, variant_eval(0, 0), {1.0, 0.98, 1.02})});
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kDoNotShip);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "speed-up 1.00x (rounds 0.98 .. 1.02) < 1.05x"));
}

TEST(StudyDecision, TimingsOnALoadedMachineJudgeNoSpeed) {
  // Fast and accurate, but timed under load: the speed-up is the load's, so nothing ships on it.
  const StudyDecision fast = decide_on(
      {variant("fp8 a", Precision::kF8, variant_eval(4, 2), {1.3, 1.25, 1.35})}, spec_for_tests(), false);
  EXPECT_EQ(fast.verdicts[0].outcome, ShipOutcome::kCannotTell);
  EXPECT_EQ(fast.outcome, ShipOutcome::kCannotTell);
  EXPECT_FALSE(fast.ship_fp8);
  EXPECT_FALSE(fast.speed_judged);
  EXPECT_TRUE(any_reason_has(fast.verdicts[0], "speed not judged"));
  EXPECT_FALSE(any_reason_has(fast.verdicts[0], "speed-up")) << "no speed-up is cited";
  // Slow under load is not "too slow" either; an accuracy loss still decides.
  const StudyDecision slow = decide_on(
      {variant("fp8 a", Precision::kF8, variant_eval(0, 0), {0.2, 0.0, 0.9})}, spec_for_tests(), false);
  EXPECT_EQ(slow.verdicts[0].outcome, ShipOutcome::kCannotTell);
  const StudyDecision lossy = decide_on(
      {variant("fp8 a", Precision::kF8, variant_eval(80, 10), {1.3, 1.25, 1.35})}, spec_for_tests(), false);
  EXPECT_EQ(lossy.verdicts[0].outcome, ShipOutcome::kDoNotShip);
}

TEST(StudyDecision, CannotTellWhenTheThresholdIsInsideTheInterval) {
  // 30 lost, 12 gained: drop 0.9 points, 95% CI about 0.25 .. 1.56 holds the threshold 1.
  const StudyDecision d =
      decide_on({variant("fp8 a", Precision::kF8, variant_eval(30, 12), {1.3, 1.25, 1.35})});
  const VariantVerdict& v = d.verdicts[0];
  EXPECT_EQ(v.outcome, ShipOutcome::kCannotTell);
  EXPECT_EQ(d.outcome, ShipOutcome::kCannotTell);
  EXPECT_FALSE(d.ship_fp8);
  const PairedCounts counts{1870, 30, 12, 88};
  ASSERT_TRUE(v.images_needed.has_value());
  EXPECT_EQ(*v.images_needed, *images_to_decide(counts, 0.01));
  EXPECT_GT(*v.images_needed, kImages);
  EXPECT_EQ(d.images_needed, v.images_needed);
  EXPECT_TRUE(any_reason_has(v, "straddles"));
  EXPECT_NE(d.reasons[0].find("cannot tell with 2000 images (about "), std::string::npos) << d.reasons[0];
}

TEST(StudyDecision, SaysWhenTheSpeedUpsLowEndIsUnderTheThreshold) {
  const StudyDecision d = decide_on({variant("fp8 a", Precision::kF8, variant_eval(0, 0), {1.1, 1.0, 1.2})});
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kShip);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "low end over the rounds is under 1.05x"));
}

TEST(StudyDecision, NonFiniteOutputsNeverShip) {
  EvalResult eval = variant_eval(0, 0);
  eval.non_finite.nan = 3;
  const StudyDecision d = decide_on({variant("fp8 a", Precision::kF8, std::move(eval), {1.3, 1.3, 1.3})});
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kDoNotShip);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "NaN/Inf"));
}

TEST(StudyDecision, UnlabelledDataIsJudgedOnAgreementAlone) {
  std::vector<VariantResult> results = {
      variant("fp16", Precision::kF16, eval_wrong_on(range(0, 100), false), {1.0, 1.0, 1.0}),
      variant("fp8 a", Precision::kF8, variant_eval(30, 12, false), {1.3, 1.3, 1.3})};
  attach_statistics(spec_for_tests(), results);
  EXPECT_FALSE(results[1].statistics.top1.has_value());
  EXPECT_FALSE(results[1].statistics.top1_vs_baseline.has_value());
  ASSERT_TRUE(results[1].statistics.agreement_vs_baseline.has_value());
  const StudyDecision d = decide(spec_for_tests(), results);
  EXPECT_FALSE(d.labelled);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "unlabelled data"));
  EXPECT_FALSE(any_reason_has(d.verdicts[0], "against labels"));
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kCannotTell);
}

TEST(StudyDecision, TheStudyShipsTheFastestShippingVariantOverUndecidedOnes) {
  const StudyDecision d = decide_on({variant("slow", Precision::kF8, variant_eval(0, 0), {1.1, 1.1, 1.1}),
                                     variant("open", Precision::kF8, variant_eval(30, 12), {1.9, 1.9, 1.9}),
                                     variant("fast", Precision::kF8, variant_eval(1, 0), {1.4, 1.4, 1.4}),
                                     variant("bad", Precision::kF8, variant_eval(80, 0), {2.0, 2.0, 2.0})});
  EXPECT_EQ(d.outcome, ShipOutcome::kShip);
  EXPECT_EQ(d.variant, "fast");
  EXPECT_FALSE(d.images_needed.has_value());
  ASSERT_EQ(d.verdicts.size(), 4u);
  EXPECT_EQ(d.verdicts[1].outcome, ShipOutcome::kCannotTell);
  EXPECT_EQ(d.verdicts[3].outcome, ShipOutcome::kDoNotShip);
}

TEST(StudyDecision, Bf16AndInt8AreCandidatesAndFp32IsNot) {
  const StudyDecision d = decide_on({variant("fp32", Precision::kF32, variant_eval(0, 0), {3.0, 3.0, 3.0}),
                                     variant("bf16", Precision::kBf16, variant_eval(0, 0), {1.6, 1.6, 1.6}),
                                     variant("int8 all max", Precision::kI8, variant_eval(1, 0), {2.2, 2.2, 2.2})});
  ASSERT_EQ(d.verdicts.size(), 2u);
  EXPECT_EQ(d.outcome, ShipOutcome::kShip);
  EXPECT_EQ(d.variant, "int8 all max");
}

TEST(StudyDecision, AgreementWithFp32IsPairedAgainstTheBaselinesAgreement) {
  // The labels are class 1 on every image and fp32 says 0: the variant leaves fp32 on 60 images, which
  // raises its top-1 by 3 points but drops its agreement with fp32 by as much. Each is judged apart.
  EvalResult baseline = eval_wrong_on({});
  EvalResult fp8 = eval_wrong_on(range(0, 60));
  for (EvalResult* eval : {&baseline, &fp8}) {
    for (ImageOutcome& image : eval->per_image) image.label = 1;
  }
  std::vector<VariantResult> results = {variant("fp16", Precision::kF16, std::move(baseline), {1, 1, 1}),
                                        variant("fp8 a", Precision::kF8, std::move(fp8), {1.3, 1.3, 1.3})};
  attach_statistics(spec_for_tests(), results);
  const QualityStatistics& s = results[1].statistics;
  EXPECT_NEAR(s.agreement->estimate, 0.97, 1e-12);
  EXPECT_NEAR(s.agreement_vs_baseline->drop.estimate, 0.03, 1e-12);
  EXPECT_EQ(s.agreement_vs_baseline->counts.baseline_only, 60);
  const StudyDecision d = decide(spec_for_tests(), results);
  EXPECT_NEAR(s.top1_vs_baseline->drop.estimate, -0.03, 1e-12);
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kDoNotShip);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "agreement with fp32 (vs fp16) drops by 3.00 points"));
}

TEST(StudyDecision, PairsOnlyTheSameImages) {
  EvalResult baseline = eval_wrong_on({});
  EvalResult shifted = eval_wrong_on({});
  shifted.per_image[7].index = 9999;
  EXPECT_THROW(quality_statistics(shifted, &baseline), Error);
  shifted.per_image.pop_back();
  EXPECT_THROW(quality_statistics(shifted, &baseline), Error);
}

TEST(StudyDecision, AutoIsJudgedOnTheHeldOutImages) {
  VariantResult automatic = variant("fp8 auto max", Precision::kF8, variant_eval(0, 0), {1.3, 1.3, 1.3});
  automatic.quantization["auto"] = {{"images", 16},
                                    {"kept_out_of_fp8", 2},
                                    {"curve",
                                     {{{"kept", 0}, {"logit_error", 0.2}, {"agreement", 0.9}},
                                      {{"kept", 2}, {"logit_error", 0.01}, {"agreement", 1.0}}}}};
  StudySpec spec = spec_for_tests();
  spec.auto_target = parse_auto_target("logit-error=0.05");
  const StudyDecision d = decide_on({automatic}, spec);
  ASSERT_TRUE(d.verdicts[0].auto_target.has_value());
  const AutoTargetCheck& check = *d.verdicts[0].auto_target;
  EXPECT_EQ(check.search_images, 16);
  EXPECT_DOUBLE_EQ(check.search_logit_error, 0.01);
  EXPECT_EQ(check.held_out_images, kImages);
  // The variant is wrong on 100 images, each with logits (0, 1) against fp32's (1, 0).
  EXPECT_NEAR(check.held_out_logit_error, std::sqrt(2.0 * 100 / kImages), 1e-12);
  EXPECT_EQ(check.verdict, AutoTargetCheck::Verdict::kMissed);
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "held-out images: missed"));

  spec.auto_target = parse_auto_target("agreement=0.9");
  const StudyDecision by_agreement = decide_on({automatic}, spec);
  EXPECT_EQ(by_agreement.verdicts[0].auto_target->verdict, AutoTargetCheck::Verdict::kMet);
  spec.auto_target = parse_auto_target("agreement=0.95");
  const StudyDecision on_the_edge = decide_on({automatic}, spec);
  EXPECT_EQ(on_the_edge.verdicts[0].auto_target->verdict, AutoTargetCheck::Verdict::kCannotTell);
}

TEST(StudyDecision, JsonNamesEveryFigure) {
  std::vector<VariantResult> results = {
      variant("fp16", Precision::kF16, eval_wrong_on(range(0, 100)), {1, 1, 1}),
      variant("fp8 a", Precision::kF8, variant_eval(30, 12), {1.3, 1.3, 1.3})};
  attach_statistics(spec_for_tests(), results);
  const nlohmann::json stats = to_json(results[1].statistics);
  EXPECT_EQ(stats.at("images"), kImages);
  EXPECT_NEAR(stats.at("top1").at("estimate").get<double>(), 1.0 - 118.0 / kImages, 1e-12);
  EXPECT_LT(stats.at("top1").at("ci95_low").get<double>(), stats.at("top1").at("estimate").get<double>());
  const nlohmann::json& paired = stats.at("top1_vs_baseline");
  EXPECT_EQ(paired.at("images_only_baseline_succeeds"), 30);
  EXPECT_EQ(paired.at("images_only_variant_succeeds"), 12);
  EXPECT_NEAR(paired.at("mcnemar_exact_p").get<double>(), mcnemar_exact_p(30, 12), 1e-15);
  EXPECT_TRUE(to_json(results[0].statistics).at("top1_vs_baseline").is_null());
  const nlohmann::json decision = to_json(decide(spec_for_tests(), results));
  EXPECT_EQ(decision.at("outcome"), "cannot tell");
  EXPECT_EQ(decision.at("variants")[0].at("outcome"), "cannot tell");
  EXPECT_GT(decision.at("images_needed").get<std::int64_t>(), kImages);
  const nlohmann::json& verdict = decision.at("variants")[0];
  EXPECT_TRUE(verdict.at("speedup_median_reaches_min").get<bool>());
  EXPECT_FALSE(verdict.at("speedup_low_end_under_min").get<bool>());
  ASSERT_EQ(verdict.at("criteria").size(), 2u);
  EXPECT_EQ(verdict.at("criteria")[0].at("criterion"), "top1_drop_vs_baseline");
  EXPECT_EQ(verdict.at("criteria")[0].at("verdict"), "undecided");
  EXPECT_EQ(verdict.at("criteria")[0].at("max_drop"), 0.01);
  EXPECT_EQ(verdict.at("criteria")[0].at("images_to_decide"), verdict.at("images_needed"));
  EXPECT_EQ(verdict.at("criteria")[1].at("criterion"), "top1_agreement_drop_vs_baseline");
}

TEST(StudyDecision, WithoutTheBaselineNothingIsPairedAndNothingShips) {
  std::vector<VariantResult> results = {
      variant("fp8 a", Precision::kF8, variant_eval(0, 0), {1.3, 1.3, 1.3})};
  attach_statistics(spec_for_tests(), results);
  EXPECT_FALSE(results[0].statistics.agreement_vs_baseline.has_value());
  const StudyDecision d = decide(spec_for_tests(), results);
  EXPECT_EQ(d.verdicts[0].outcome, ShipOutcome::kCannotTell);
  EXPECT_FALSE(d.verdicts[0].images_needed.has_value());
  EXPECT_TRUE(any_reason_has(d.verdicts[0], "no paired figures against the baseline fp16"));
}

}  // namespace
}  // namespace kiln
