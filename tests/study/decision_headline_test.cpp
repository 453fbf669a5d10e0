// The report's headline: a study whose baseline gives NaN/Inf ships no FP8 variant, and says so
// instead of blaming the variants.
#include "study/decision_headline.h"

#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace kiln
