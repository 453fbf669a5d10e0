// The report's headline: a study whose baseline gives NaN/Inf ships no FP8 variant, and says so
// instead of blaming the variants; a study timed on a loaded machine says that, and draws no reason
// from its timings.
#include "study/decision_headline.h"

#include <gtest/gtest.h>

#include "study/report_sections.h"

namespace kiln {
namespace {

StudyResult result_with_one_verdict() {
  StudyResult result;
  result.decision.outcome = ShipOutcome::kDoNotShip;
  VariantVerdict verdict;
  verdict.variant = "fp8 all max";
  verdict.outcome = ShipOutcome::kDoNotShip;
  result.decision.verdicts.push_back(verdict);
  return result;
}

TEST(DecisionHeadline, ANonFiniteBaselineIsTheReasonNotTheVariants) {
  StudyResult result = result_with_one_verdict();
  result.warnings = {"fp16 (the baseline) gives NaN/Inf on 3 of 10 images, 0 of 13 stress inputs"};
  const std::string headline = decision_headline(result);
  EXPECT_EQ(
      headline.rfind("**Do not ship FP8: a variant the others are measured against gives NaN/Inf.**", 0), 0u)
      << headline;
  EXPECT_NE(headline.find("Fp16 (the baseline) gives NaN/Inf on 3 of 10 images"), std::string::npos);
  EXPECT_EQ(headline.find("Every FP8 variant misses"), std::string::npos);
  EXPECT_EQ(headline.find("more warning"), std::string::npos);
  result.warnings.push_back("fp32 (the reference) gives NaN/Inf on 1 of 10 images, 0 of 13 stress inputs");
  EXPECT_NE(decision_headline(result).find("(1 more warning(s) above)"), std::string::npos);
}

TEST(DecisionHeadline, WithoutWarningsTheOutcomeSpeaks) {
  StudyResult result = result_with_one_verdict();
  EXPECT_EQ(decision_headline(result).rfind("**Do not ship FP8.** Every FP8 variant misses", 0), 0u);
  result.decision.verdicts.clear();
  EXPECT_EQ(decision_headline(result), "**Do not ship FP8.** The study has no FP8 variant.");
  result.warnings = {"fp16 (the baseline) gives NaN/Inf on 1 of 1 images, 0 of 13 stress inputs"};
  EXPECT_NE(decision_headline(result).find("the others are measured against gives NaN/Inf"),
            std::string::npos)
      << "the warning comes first even with no verdict";
  result.warnings.clear();
  result.decision.outcome = ShipOutcome::kShip;
  result.decision.variant = "fp8 nose max";
  EXPECT_EQ(decision_headline(result).rfind("**Ship FP8: fp8 nose max.**", 0), 0u);
  VariantResult int8;
  int8.variant.name = "int8 all max";
  int8.variant.precision = Precision::kI8;
  result.variants.push_back(int8);
  result.decision.variant = "int8 all max";
  EXPECT_EQ(decision_headline(result).rfind("**Ship int8: int8 all max.**", 0), 0u);
}

TEST(DecisionHeadline, ALoadedMachineIsSaidAndNoSpeedReasonIsDrawn) {
  StudyResult result = result_with_one_verdict();
  result.inputs.backend = "cpu";
  result.decision.outcome = ShipOutcome::kCannotTell;
  result.decision.speed_judged = false;
  result.timing.warnings = {
      "the machine was loaded: its 1-minute load average was 4.10, above its 2 "
      "hardware threads"};
  result.timing.outliers = {"fp16, round 2: 1370.000 ms, 2245.9x the median 0.610 ms"};
  const std::string headline = decision_headline(result);
  EXPECT_NE(headline.find("the timings were taken on a loaded machine"), std::string::npos) << headline;
  const std::string block = warnings_block(result);
  EXPECT_NE(block.find("load average was 4.10"), std::string::npos) << block;
  EXPECT_NE(block.find("Outlying round: fp16, round 2"), std::string::npos) << block;
  const std::string revisit = revisit_section(result);
  EXPECT_NE(revisit.find("no reason here is drawn from them"), std::string::npos) << revisit;
  EXPECT_EQ(revisit.find("At larger batch sizes"), std::string::npos) << revisit;
  EXPECT_EQ(result.all_warnings().size(), 1u);
}

}  // namespace
}  // namespace kiln
