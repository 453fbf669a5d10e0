// The FP8 engines against a fake quantization of the same plans: the report's table and its one line on
// constructed figures, and `kiln study` end to end, where an engine on the fake-quantizing backend itself
// must match it exactly (the images pair up) and a separate calibration set leaves every image held out.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "study/fake_quant_check.h"
#include "tests/study/markdown_tables.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kFamilies;
using testing::run_kiln;
using testing::Scratch;

// A variant whose engine and fake quantization see `images` images of class 0 (labels 0): the engine
// is wrong on `engine_wrong` of them, the fake quantization on `emulation_wrong`, each on the first ones.
FakeQuantVariant variant(const std::string& name, int images, int engine_wrong, int emulation_wrong) {
  FakeQuantVariant v;
  v.variant = name;
  for (int i = 0; i < images; ++i) {
    const std::vector<float> engine =
        i < engine_wrong ? std::vector<float>{0.f, 1.f} : std::vector<float>{1.f, 0.f};
    const std::vector<float> emulated =
        i < emulation_wrong ? std::vector<float>{0.f, 1.f} : std::vector<float>{1.f, 0.f};
    v.engine_labels.add(engine, 0);
    v.emulation_labels.add(emulated, 0);
    v.vs_emulation.add(engine, emulated, "image" + std::to_string(i));
  }
  return v;
}

FakeQuantCheck check_of(std::vector<FakeQuantVariant> variants, std::size_t held_out, std::size_t cap) {
  FakeQuantCheck check;
  check.backend = "cuda";
  check.emulation_backend = kFakeQuantBackend;
  check.held_out_images = held_out;
  check.cap = cap;
  check.images = static_cast<std::size_t>(variants.front().vs_emulation.images());
  check.labelled = true;
  check.variants = std::move(variants);
  return check;
}

TEST(FakeQuantSection, MatchingEnginesPutTheLossOnTheRecipe) {
  const FakeQuantCheck check =
      check_of({variant("fp8 all max", 200, 20, 20), variant("fp8 nose max", 200, 10, 11)}, 2000, 200);
  const std::string md = fake_quant_section(check, 0.01);
  EXPECT_EQ(md.rfind("### FP8 engine vs fake quantization of the same plan", 0), 0u);
  std::vector<std::string> errors;
  const auto tables = testing::parse_tables(md, errors);
  for (const std::string& error : errors) ADD_FAILURE() << error;
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].header.front(), "variant");
  ASSERT_EQ(tables[0].rows.size(), 2u);
  EXPECT_EQ(tables[0].rows[0][1], "90.00%") << "engine top-1";
  EXPECT_EQ(tables[0].rows[1][2], "94.50%") << "fake-quant top-1";
  EXPECT_EQ(tables[0].rows[1][3], "0.50") << "difference in points";
  EXPECT_EQ(tables[0].rows[1][4], "99.50% (199/200)");
  EXPECT_NE(md.find("200 of the 2000 held-out images (a fixed-stride sample, capped at 200"),
            std::string::npos);
  EXPECT_NE(md.find("the recipe's"), std::string::npos);
  EXPECT_EQ(md.find("kernels add error"), std::string::npos);
}

TEST(FakeQuantSection, AnEngineBeyondTheToleranceIsNamed) {
  const FakeQuantCheck check =
      check_of({variant("fp8 all max", 200, 20, 20), variant("fp8 all entropy", 200, 30, 20)}, 200, 500);
  const std::string md = fake_quant_section(check, 0.01);
  EXPECT_NE(md.find("The engine of fp8 all entropy differs"), std::string::npos) << md;
  EXPECT_NE(md.find("kernels add error"), std::string::npos);
  EXPECT_EQ(md.find("capped"), std::string::npos) << "every held-out image was checked";
  EXPECT_EQ(fake_quant_section(FakeQuantCheck{}, 0.01), "") << "no FP8 variant, no section";
}

TEST(FakeQuantSection, JsonHasEveryFigure) {
  const nlohmann::json json = check_of({variant("fp8 all max", 100, 3, 1)}, 400, 100).to_json();
  EXPECT_EQ(json.at("emulation_backend"), "cpu-reference");
  EXPECT_EQ(json.at("images"), 100);
  EXPECT_EQ(json.at("held_out_images"), 400);
  const nlohmann::json& row = json.at("variants").at(0);
  EXPECT_EQ(row.at("top1_agreements"), 98);
  EXPECT_DOUBLE_EQ(row.at("engine_top1").get<double>(), 0.97);
  EXPECT_DOUBLE_EQ(row.at("emulation_top1").get<double>(), 0.99);
  EXPECT_GT(row.at("relative_l2").get<double>(), 0.0);
}

nlohmann::json study_json(const fs::path& out) {
  return nlohmann::json::parse(testing::bytes_of(out / "study.json"));
}

// On the fake-quantizing backend itself the engine is its own fake quantization: any difference would
// mean the two runs paired different images or preprocessed them differently.
TEST(FakeQuantStudy, OnTheEmulatingBackendItselfTheEngineMatchesExactly) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  const auto ran = run_kiln("study " + (kFamilies / "timm_resnest").string() +
                            " --backend cpu-reference --variants fp16,'fp8 all max' --images 24 --every 4 "
                            "--fake-quant-images 5 --rounds 1 --seconds-per-round 10ms --batches 1 "
                            "--opt-levels 3 -o " +
                            out.string());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const nlohmann::json check = study_json(out).at("fake_quantization");
  EXPECT_EQ(check.at("held_out_images"), 18);
  EXPECT_EQ(check.at("images"), 5) << "capped by --fake-quant-images";
  ASSERT_EQ(check.at("variants").size(), 1u) << "one row per FP8 variant";
  const nlohmann::json& row = check.at("variants").at(0);
  EXPECT_EQ(row.at("top1_agreements"), 5);
  EXPECT_EQ(row.at("relative_l2").get<double>(), 0.0);
  EXPECT_EQ(row.at("engine_top1"), row.at("emulation_top1"));
  EXPECT_NE(testing::bytes_of(out / "STUDY.md").find("5 of the 18 held-out images"), std::string::npos);
}

// --calib: calibration from a set of its own, so every sampled image is held out; --fake-quant-images 0
// leaves the check out.
TEST(FakeQuantStudy, SeparateCalibrationHoldsOutTheWholeSample) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  const fs::path calibration = testing::kPhotos;  // 16 images: a quick calibration
  const auto ran =
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --calib " + calibration.string() +
               " --variants fp16,'fp8 all max' --images 12 --fake-quant-images 0 --rounds 1 "
               "--seconds-per-round 10ms --batches 1 --opt-levels 3 -o " +
               out.string());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const nlohmann::json study = study_json(out);
  const nlohmann::json& data = study.at("data");
  EXPECT_EQ(data.at("held_out_images"), 12);
  EXPECT_EQ(data.at("calibration_images"), 16);
  EXPECT_EQ(data.at("calibration_source").at("data"), calibration.string());
  EXPECT_TRUE(data.at("every").is_null());
  EXPECT_TRUE(study.at("fake_quantization").at("variants").empty());
  const std::string markdown = testing::bytes_of(out / "STUDY.md");
  EXPECT_NE(markdown.find("all 12 are held out (calibration: 16 images of `"), std::string::npos);
  EXPECT_EQ(markdown.find("FP8 engine vs fake quantization"), std::string::npos);
}

}  // namespace
}  // namespace kiln
