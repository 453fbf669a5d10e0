// The shipped manifests, and what parsing keeps from a valid manifest.
#include "manifest/manifest.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "manifest_test_util.h"

namespace kiln {
namespace {

using testing::known_families;
using testing::with;

const std::filesystem::path kFamiliesDir = std::filesystem::path(KILN_SOURCE_DIR) / "families";

void expect_fp8_study_recipe(const Manifest& manifest) {
  ASSERT_TRUE(manifest.quantization.has_value());
  EXPECT_EQ(manifest.quantization->weights, QuantGranularity::kPerChannel);
  EXPECT_EQ(manifest.quantization->activations, QuantGranularity::kPerTensor);
  EXPECT_EQ(manifest.quantization->calibration, Calibration::kMax);
  EXPECT_EQ(manifest.quantization->calibration_images, 500);
  EXPECT_EQ(manifest.quantization->recipe, "all");
}

TEST(ShippedManifests, TimmResnestParsesAndValidates) {
  const Manifest manifest = load_manifest(kFamiliesDir / "timm_resnest" / "manifest.toml");
  EXPECT_NO_THROW(validate_manifest(manifest, known_families()));
  EXPECT_EQ(manifest.family, "timm_resnest");
  EXPECT_EQ(manifest.hub_id, "timm/resnest50d.in1k");
  EXPECT_EQ(manifest.revision, "2239b0d822126dee3bc7a5357514de35b8f42092");
  EXPECT_EQ(manifest.task, Task::kClassification);
  EXPECT_EQ(manifest.input_size, 224);
  EXPECT_EQ(manifest.batch_sizes, (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(manifest.precision, Precision::kF16);
  EXPECT_EQ(manifest.opt_level, 3);
  EXPECT_EQ(manifest.backends, std::vector<std::string>{"cpu"});
  expect_fp8_study_recipe(manifest);
  ASSERT_TRUE(manifest.study.is_object());
  EXPECT_EQ(manifest.study.at("baseline"), "fp16");
  // The demo compares every precision the CPU may ship: fp32, fp16, bf16, five FP8 recipes and int8.
  EXPECT_EQ(manifest.study.at("variants").size(), 9u);
  EXPECT_EQ(manifest.study.at("variants").at(2), "bf16");
  EXPECT_EQ(manifest.study.at("variants").at(8), "int8 all max");
}

TEST(ShippedManifests, TimmResnetParsesAndValidates) {
  const Manifest manifest = load_manifest(kFamiliesDir / "timm_resnet" / "manifest.toml");
  EXPECT_NO_THROW(validate_manifest(manifest, known_families()));
  EXPECT_EQ(manifest.family, "timm_resnet");
  EXPECT_EQ(manifest.hub_id, "timm/resnet50.a1_in1k");
  EXPECT_EQ(manifest.revision, "main");
  EXPECT_EQ(manifest.input_size, 224);
  EXPECT_EQ(manifest.batch_sizes, (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(manifest.precision, Precision::kF16);
  EXPECT_EQ(manifest.opt_level, 3);
  expect_fp8_study_recipe(manifest);
}

TEST(ShippedManifests, Yolov10IsADetectionManifest) {
  const Manifest manifest = load_manifest(kFamiliesDir / "yolov10" / "manifest.toml");
  EXPECT_NO_THROW(validate_manifest(manifest, {"yolov10"}));
  EXPECT_EQ(manifest.task, Task::kDetection);
  EXPECT_EQ(manifest.input_size % 32, 0);
  EXPECT_EQ(manifest.hub_id, "jameslahm/yolov10n");
}

TEST(ManifestParsing, KeepsEveryValue) {
  const Manifest manifest = testing::parse_and_validate(testing::kValidManifest);
  EXPECT_EQ(manifest.path, std::filesystem::path(testing::kTestPath));
  EXPECT_EQ(manifest.checkpoint_sha256, "");
  EXPECT_EQ(manifest.backends, (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(ManifestParsing, OptionalKeysTakeTheirDefaults) {
  std::string text = with("checkpoint_sha256 = \"\"\n", "");
  text = testing::replaced(text, "backends = [\"cpu\", \"cuda\"]\n", "");
  text.erase(text.find("[quantization]"));
  const Manifest manifest = testing::parse_and_validate(text);
  EXPECT_EQ(manifest.checkpoint_sha256, "");
  EXPECT_EQ(manifest.backends, std::vector<std::string>{"cpu"});
  EXPECT_FALSE(manifest.quantization.has_value());
}

TEST(ManifestParsing, SingleBatchSizeIsAList) {
  const Manifest manifest = testing::parse_and_validate(with("batch = [1, 32]", "batch = 8"));
  EXPECT_EQ(manifest.batch_sizes, std::vector<std::int64_t>{8});
}

TEST(ManifestParsing, PinnedCheckpointDigest) {
  const std::string digest(64, 'a');
  const Manifest manifest =
      testing::parse_and_validate(with("checkpoint_sha256 = \"\"", "checkpoint_sha256 = \"" + digest + "\""));
  EXPECT_EQ(manifest.checkpoint_sha256, digest);
}

TEST(ManifestParsing, InlineTablesAndDottedKeysAreTheSameTable) {
  // Root keys come before the first [section]; after it they would belong to that section.
  std::string text =
      "build = { precision = \"fp32\", opt_level = 0 }\n" +
      with("[build]\nprecision = \"fp16\"\nopt_level = 3\nbackends = [\"cpu\", \"cuda\"]\n", "");
  const Manifest manifest = testing::parse_and_validate(text);
  EXPECT_EQ(manifest.precision, Precision::kF32);
  EXPECT_EQ(manifest.opt_level, 0);
}

TEST(ManifestParsing, StudyIsKeptAsJson) {
  const std::string text = std::string(testing::kValidManifest) + R"(
[study]
name = "fp8-sensitivity"
recipes = ["all", "nose", "layer1.*"]
images = 500
[study.sweep]
percentile = 99.99
per_layer = true
)";
  const Manifest manifest = testing::parse_and_validate(text);
  EXPECT_EQ(manifest.study["name"], "fp8-sensitivity");
  EXPECT_EQ(manifest.study["recipes"], (nlohmann::json{"all", "nose", "layer1.*"}));
  EXPECT_EQ(manifest.study["images"], 500);
  EXPECT_DOUBLE_EQ(manifest.study["sweep"]["percentile"].get<double>(), 99.99);
  EXPECT_EQ(manifest.study["sweep"]["per_layer"], true);
}

TEST(ManifestParsing, JsonHasTheTomlLayout) {
  const nlohmann::json json = manifest_to_json(testing::parse_and_validate(testing::kValidManifest));
  EXPECT_EQ(json["model"]["hub_id"], "timm/resnest50d.in1k");
  EXPECT_EQ(json["model"]["task"], "classification");
  EXPECT_EQ(json["input"]["batch"], (nlohmann::json{1, 32}));
  EXPECT_EQ(json["build"]["precision"], "fp16");
  EXPECT_EQ(json["quantization"]["weights"], "per-channel");
  EXPECT_EQ(json["quantization"]["calibration"], "max");
  EXPECT_FALSE(json.contains("study"));
}

TEST(ManifestLoading, MissingFileNamesThePath) {
  try {
    load_manifest("no/such/manifest.toml");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "no/such/manifest.toml: no such manifest file");
  }
}

}  // namespace
}  // namespace kiln
