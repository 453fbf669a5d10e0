// NaN/Inf in the variants a study measures against: on held-out images every comparison is void; on
// stress inputs alone the image figures stand, yet the baseline fails its finite check. Either way no FP8
// variant ships, and the words say which.
#include "study/non_finite_check.h"

#include <gtest/gtest.h>

#include "study/study_runner.h"

namespace kiln {
namespace {

VariantResult variant(const std::string& name, std::size_t bad_images, std::size_t bad_stress) {
  VariantResult r;
  r.variant.name = name;
  r.eval.images_evaluated = 100;
  r.eval.images_with_non_finite = bad_images;
  if (bad_images > 0) r.eval.non_finite_images = {"img-7.png"};
  for (int i = 0; i < 13; ++i) {
    StressResult stress;
    stress.non_finite.inf = i < static_cast<int>(bad_stress) ? 2 : 0;
    r.eval.stress.push_back(stress);
  }
  return r;
}

StudyResult study_with(std::vector<VariantResult> variants) {
  StudyResult result;
  result.inputs.spec.baseline = "fp16";
  result.variants = std::move(variants);
  return result;
}

TEST(NonFiniteReferences, FiniteReferencesGiveNothing) {
  // An FP8 variant's own NaN/Inf is its verdict's business, not a warning about the study.
  EXPECT_TRUE(non_finite_references(
                  study_with({variant("fp32", 0, 0), variant("fp16", 0, 0), variant("fp8 all max", 5, 3)}))
                  .empty());
}

TEST(NonFiniteReferences, OnImagesNothingIsJudged) {
  const auto refs = non_finite_references(study_with({variant("fp32", 0, 0), variant("fp16", 2, 0)}));
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(refs[0].on_images);
  EXPECT_EQ(refs[0].summary,
            "fp16 (the baseline) gives NaN/Inf on 2 of 100 images, 0 of 13 stress inputs (first: img-7.png)");
  EXPECT_NE(refs[0].warning.find("every figure measured against it is meaningless"), std::string::npos);
  EXPECT_EQ(non_finite_verdict_reason(refs[0]).rfind("not judged: fp16 (the baseline)", 0), 0u);
}

TEST(NonFiniteReferences, OnStressInputsAloneTheImageFiguresStand) {
  const auto refs = non_finite_references(study_with({variant("fp32", 0, 1), variant("fp16", 0, 1)}));
  ASSERT_EQ(refs.size(), 2u);  // fp32 as the reference, fp16 as the baseline
  EXPECT_EQ(refs[0].summary, "fp32 (the reference) gives NaN/Inf on 0 of 100 images, 1 of 13 stress inputs");
  EXPECT_FALSE(refs[1].on_images);
  EXPECT_EQ(refs[1].warning.find("meaningless"), std::string::npos) << refs[1].warning;
  EXPECT_NE(refs[1].warning.find("its figures on the images stand"), std::string::npos);
  EXPECT_EQ(
      non_finite_verdict_reason(refs[1]),
      "fp16 (the baseline) gives NaN/Inf on 0 of 100 images, 1 of 13 stress inputs: it fails the finite "
      "check, so nothing ships against it");
  EXPECT_EQ(non_finite_warnings(refs).size(), 2u);
}

}  // namespace
}  // namespace kiln
