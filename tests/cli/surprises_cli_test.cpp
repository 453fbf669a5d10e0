// What a command did without saying so now says it, or refuses: NaN or Inf inputs (which backends
// answer differently), an output name promising a format kiln does not write.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::expect_one_line_error;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::Scratch;

const std::string kTinyCheckpoint = (kTiny / "model.safetensors").string();

// The golden input batch with its last value replaced by a NaN (a float32 .npy ends with its data).
fs::path input_with_nan(const Scratch& scratch) {
  std::string bytes = bytes_of(kTiny / "input.npy");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + bytes.size() - sizeof nan, &nan, sizeof nan);
  return scratch.file("nan.npy", bytes);
}

TEST(Surprises, NonFiniteInputsAreRefusedOnEveryBackendAlike) {
  const Scratch scratch;
  const std::string nan = input_with_nan(scratch).string();
  for (const std::string backend : {"cpu", "cpu-reference"}) {
    const auto run = run_kiln("run --family timm_resnest --checkpoint " + kTinyCheckpoint + " --input " +
                              nan + " --backend " + backend);
    expect_one_line_error(run, nan + ": input value nan at element ");
    EXPECT_EQ(run.exit_code, 1) << backend << ": " << run.output;
    EXPECT_NE(run.output.find("--allow-nonfinite"), std::string::npos) << run.output;
  }
  const auto allowed = run_kiln("run --family timm_resnest --checkpoint " + kTinyCheckpoint + " --input " +
                                nan + " --backend cpu-reference --allow-nonfinite");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  const std::string plan = (scratch.dir() / "tiny.kplan").string();
  const auto built = run_kiln("build " + (testing::kFamilies / "timm_resnest").string() + " --checkpoint " +
                              kTinyCheckpoint + " -o " + plan);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const auto bench = run_kiln("bench " + plan + " --batch 2 --warmup 0s --duration 10ms --input " + nan);
  expect_one_line_error(bench, "--input " + nan + ": input value nan");
  const auto without_input = run_kiln("bench " + plan + " --allow-nonfinite");
  EXPECT_EQ(without_input.exit_code, 2) << without_input.output;
  EXPECT_NE(without_input.output.find("--allow-nonfinite"), std::string::npos) << without_input.output;
}

TEST(Surprises, PreprocessWritesNoNpyUnderAnotherFormatsName) {
  const Scratch scratch;
  const fs::path png = scratch.dir() / "out.png";
  const auto result =
      run_kiln("preprocess --input " + (kPhotos / "dog.jpg").string() + " -o " + png.string());
  expect_one_line_error(result, "-o " + png.string() + ": kiln preprocess writes float32 .npy");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_FALSE(fs::exists(png));
  const auto npy = run_kiln("preprocess --input " + (kPhotos / "dog.jpg").string() + " -o " +
                            (scratch.dir() / "out.npy").string());
  EXPECT_EQ(npy.exit_code, 0) << npy.output;
}

TEST(Surprises, DatasetNamesAYoloSetAsOne) {
  const fs::path set = testing::kData / "fashion_detect";
  for (const fs::path& data : {set, set / "images" / "val"}) {
    const auto described = run_kiln("dataset " + data.string());
    ASSERT_EQ(described.exit_code, 0) << described.output;
    EXPECT_NE(described.output.find("kind     yolo-detection"), std::string::npos) << described.output;
    EXPECT_EQ(described.output.find("class-folders"), std::string::npos) << described.output;
    EXPECT_NE(described.output.find("images   200"), std::string::npos) << described.output;
    EXPECT_NE(described.output.find("labels   boxes in "), std::string::npos) << described.output;
  }
  const auto named = run_kiln("dataset " + set.string());
  EXPECT_NE(named.output.find(" 9 Ankle boot"), std::string::npos) << named.output;
  // A classification set is still what it was.
  const auto fashion = run_kiln("dataset " + (testing::kData / "fashion_mnist" / "t10k-first2500").string());
  EXPECT_EQ(fashion.output.find("yolo-detection"), std::string::npos) << fashion.output;
}

// A plan of the trained reduced models (tests/data/trained/NAME), fp32.
std::string trained_plan(const Scratch& scratch, const std::string& family, const std::string& name) {
  const std::string plan = (scratch.dir() / (name + ".kplan")).string();
  const auto built = run_kiln("build " + (testing::kFamilies / family).string() + " --checkpoint " +
                              (testing::kData / "trained" / name / "model.safetensors").string() + " -o " +
                              plan + " --precision fp32");
  EXPECT_EQ(built.exit_code, 0) << built.output;
  return plan;
}

TEST(Surprises, EvalNamesAReferenceOfAnotherFamilyOrCheckpoint) {
  const Scratch scratch;
  const std::string resnest = trained_plan(scratch, "timm_resnest", "resnest_fashion_tiny");
  const std::string resnet = trained_plan(scratch, "timm_resnet", "resnet_fashion_tiny");
  const std::string data = " --data " + (testing::kData / "fashion_mnist" / "t10k-first2500").string() +
                           " --images 4 --no-stress --json ";
  const fs::path other = scratch.dir() / "other.json", same = scratch.dir() / "same.json";
  const auto against_other = run_kiln("eval " + resnest + data + other.string() + " --reference " + resnet);
  ASSERT_EQ(against_other.exit_code, 0) << against_other.output;
  EXPECT_NE(
      against_other.output.find("note: the reference is a timm_resnet model, the plan a timm_resnest one"),
      std::string::npos)
      << against_other.output;
  EXPECT_NE(against_other.output.find("note: the reference was built from another checkpoint"),
            std::string::npos)
      << against_other.output;
  EXPECT_EQ(nlohmann::json::parse(bytes_of(other)).at("reference_differences").size(), 2u);
  const auto against_itself = run_kiln("eval " + resnest + data + same.string() + " --reference " + resnest);
  ASSERT_EQ(against_itself.exit_code, 0) << against_itself.output;
  EXPECT_EQ(against_itself.output.find("note: the reference"), std::string::npos) << against_itself.output;
  EXPECT_TRUE(nlohmann::json::parse(bytes_of(same)).at("reference_differences").empty());
}

}  // namespace
}  // namespace kiln
