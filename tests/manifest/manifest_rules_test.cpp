// One test per manifest rule: each broken manifest fails with one line naming the file and the key.
#include <gtest/gtest.h>

#include "manifest/manifest.h"
#include "manifest_test_util.h"

namespace kiln {
namespace {

using testing::contains;
using testing::error_of;
using testing::names_key;
using testing::with;

// --- structure: parse_manifest ---

TEST(ManifestRules, MissingRequiredKey) {
  const std::string message = error_of(with("hub_id = \"timm/resnest50d.in1k\"\n", ""));
  EXPECT_TRUE(names_key(message, "model.hub_id"));
  EXPECT_TRUE(contains(message, "required key is missing")) << message;
}

// toml++ quotes the character it stopped at; a line break there must not split the message.
TEST(ManifestRules, InvalidTomlStaysOneLine) {
  const std::string message = error_of(with("opt_level = 3", "opt_level = t\n"));
  EXPECT_TRUE(contains(message, "invalid TOML")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// Found by the manifest fuzz target: a value quoting a line break made a two-line error.
TEST(ManifestRules, AValueWithALineBreakStaysOneLine) {
  const std::string message = error_of(with("activations = \"per-tensor\"", "activations = \"per-t\\nsor\""));
  EXPECT_TRUE(contains(message, "got 'per-t\\nsor'")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ManifestRules, MissingRequiredSection) {
  const std::string message = error_of(with("[input]\nsize = 224\nbatch = [1, 32]\n", ""));
  EXPECT_TRUE(names_key(message, "input"));
  EXPECT_TRUE(contains(message, "required section [input] is missing")) << message;
}

TEST(ManifestRules, UnknownKey) {
  const std::string message = error_of(with("precision = \"fp16\"", "precison = \"fp16\""));
  EXPECT_TRUE(names_key(message, "build.precison"));
  EXPECT_TRUE(contains(message, "unknown key (expected one of precision, opt_level, backends)")) << message;
}

TEST(ManifestRules, UnknownKeyInQuantization) {
  const std::string message = error_of(with("recipe = \"all\"", "recipe = \"all\"\npercentile = 99.9"));
  EXPECT_TRUE(names_key(message, "quantization.percentile"));
}

TEST(ManifestRules, UnknownSection) {
  const std::string message = error_of(with("[quantization]", "[quantisation]"));
  EXPECT_TRUE(names_key(message, "quantisation"));
  EXPECT_TRUE(contains(message, "unknown section")) << message;
}

TEST(ManifestRules, WrongType) {
  const std::string message = error_of(with("size = 224", "size = \"224\""));
  EXPECT_EQ(message, "families/test/manifest.toml: key 'input.size': expected an integer, got a string");
}

TEST(ManifestRules, FloatIsNotAnInteger) {
  const std::string message = error_of(with("opt_level = 3", "opt_level = 3.0"));
  EXPECT_TRUE(names_key(message, "build.opt_level"));
  EXPECT_TRUE(contains(message, "expected an integer, got a floating-point number")) << message;
}

TEST(ManifestRules, WrongTypeInsideAList) {
  const std::string message = error_of(with("batch = [1, 32]", "batch = [1, \"32\"]"));
  EXPECT_TRUE(names_key(message, "input.batch[1]"));
  EXPECT_TRUE(contains(message, "expected an integer, got a string")) << message;
}

TEST(ManifestRules, SectionMustBeATable) {
  const std::string message = error_of("input = 224\n" + with("[input]\nsize = 224\nbatch = [1, 32]\n", ""));
  EXPECT_TRUE(names_key(message, "input"));
  EXPECT_TRUE(contains(message, "expected a table ([input]), got an integer")) << message;
}

TEST(ManifestRules, RootKeyAfterASectionBelongsToIt) {
  // A common slip: a key meant for the top level written under the last section is reported there.
  const std::string message = error_of(std::string(testing::kValidManifest) + "opt_level = 2\n");
  EXPECT_TRUE(names_key(message, "quantization.opt_level"));
}

TEST(ManifestRules, BadPrecision) {
  const std::string message = error_of(with("precision = \"fp16\"", "precision = \"fp64\""));
  EXPECT_EQ(
      message,
      "families/test/manifest.toml: key 'build.precision': expected one of fp32, fp16, bf16, fp8, int8, got 'fp64'");
}

TEST(ManifestRules, BadTask) {
  const std::string message = error_of(with("task = \"classification\"", "task = \"segmentation\""));
  EXPECT_TRUE(names_key(message, "model.task"));
  EXPECT_TRUE(contains(message, "expected one of classification, detection")) << message;
}

TEST(ManifestRules, BadCalibration) {
  const std::string message = error_of(with("calibration = \"max\"", "calibration = \"minmax\""));
  EXPECT_TRUE(names_key(message, "quantization.calibration"));
  EXPECT_TRUE(contains(message, "expected one of max, percentile, entropy, mse")) << message;
}

TEST(ManifestRules, TomlSyntaxErrorGivesLineAndColumn) {
  // Line 9 is [input]'s size line; its '=' is missing.
  const std::string message = error_of(with("size = 224", "size 224"));
  EXPECT_EQ(message.rfind("families/test/manifest.toml:9:", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "invalid TOML")) << message;
}

TEST(ManifestRules, DuplicateKeyIsASyntaxError) {
  const std::string message = error_of(with("opt_level = 3", "opt_level = 3\nopt_level = 2"));
  EXPECT_EQ(message.rfind("families/test/manifest.toml:15:", 0), 0u) << message;
}

// --- values and consistency: validate_manifest ---

TEST(ManifestRules, UnknownFamily) {
  const std::string message = error_of(with("family = \"timm_resnest\"", "family = \"timm_vit\""));
  EXPECT_EQ(message,
            "families/test/manifest.toml: key 'model.family': expected a known family (one of "
            "timm_resnest, timm_resnet), got 'timm_vit'");
}

TEST(ManifestRules, NoRegisteredFamilies) {
  const Manifest manifest = parse_manifest(testing::kValidManifest, std::string(testing::kTestPath));
  try {
    validate_manifest(manifest, {});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_TRUE(names_key(error.what(), "model.family"));
    EXPECT_TRUE(contains(error.what(), "none are registered")) << error.what();
  }
}

TEST(ManifestRules, HubIdNeedsOwnerAndName) {
  for (const char* id : {"resnest50d.in1k", "timm/", "/resnest50d", "timm/resnest/50d", "timm/resnest 50d"}) {
    const std::string message = error_of(with("\"timm/resnest50d.in1k\"", std::string("\"") + id + "\""));
    EXPECT_TRUE(names_key(message, "model.hub_id")) << id;
  }
}

TEST(ManifestRules, RevisionIsAFullCommitOrARefName) {
  for (const char* revision : {"main", "v1.0", "refs/pr/3", "0123456789abcdef0123456789abcdef01234567"}) {
    EXPECT_NO_THROW(testing::parse_and_validate(
        with("\"2239b0d822126dee3bc7a5357514de35b8f42092\"", std::string("\"") + revision + "\"")))
        << revision;
  }
  for (const char* revision :
       {"", "2239b0d", "2239B0D822126DEE3BC7A5357514DE35B8F42092", "my branch", "-x", "a..b"}) {
    const std::string message =
        error_of(with("\"2239b0d822126dee3bc7a5357514de35b8f42092\"", std::string("\"") + revision + "\""));
    EXPECT_TRUE(names_key(message, "model.revision")) << revision;
  }
}

TEST(ManifestRules, BadSha256) {
  for (const std::string& digest : {std::string(63, 'a'), std::string(64, 'g'), std::string(64, 'A')}) {
    const std::string message =
        error_of(with("checkpoint_sha256 = \"\"", "checkpoint_sha256 = \"" + digest + "\""));
    EXPECT_TRUE(names_key(message, "model.checkpoint_sha256")) << digest;
    EXPECT_TRUE(contains(message, "expected 64 lowercase hex digits")) << message;
  }
}

TEST(ManifestRules, InputSizeMustBePositive) {
  const std::string message = error_of(with("size = 224", "size = 0"));
  EXPECT_TRUE(names_key(message, "input.size"));
}

TEST(ManifestRules, DetectionSizeIsAMultipleOf32) {
  const std::string detection = with("task = \"classification\"", "task = \"detection\"");
  EXPECT_NO_THROW(testing::parse_and_validate(testing::replaced(detection, "size = 224", "size = 640")));
  const std::string message = error_of(testing::replaced(detection, "size = 224", "size = 300"));
  EXPECT_TRUE(names_key(message, "input.size"));
  EXPECT_TRUE(contains(message, "multiple of 32")) << message;
}

TEST(ManifestRules, BatchZero) {
  const std::string message = error_of(with("batch = [1, 32]", "batch = [0, 32]"));
  EXPECT_EQ(message, "families/test/manifest.toml: key 'input.batch': expected positive batch sizes, got 0");
  EXPECT_TRUE(names_key(error_of(with("batch = [1, 32]", "batch = 0")), "input.batch"));
}

TEST(ManifestRules, BatchListIsNotEmptyAndDistinct) {
  EXPECT_TRUE(names_key(error_of(with("batch = [1, 32]", "batch = []")), "input.batch"));
  const std::string message = error_of(with("batch = [1, 32]", "batch = [1, 32, 1]"));
  EXPECT_TRUE(names_key(message, "input.batch"));
  EXPECT_TRUE(contains(message, "distinct")) << message;
}

TEST(ManifestRules, OptLevelRange) {
  EXPECT_NO_THROW(testing::parse_and_validate(with("opt_level = 3", "opt_level = 0")));
  EXPECT_TRUE(names_key(error_of(with("opt_level = 3", "opt_level = 4")), "build.opt_level"));
  EXPECT_TRUE(names_key(error_of(with("opt_level = 3", "opt_level = -1")), "build.opt_level"));
}

TEST(ManifestRules, BackendsAreKnownAndDistinct) {
  const std::string backends = "backends = [\"cpu\", \"cuda\"]";
  EXPECT_TRUE(names_key(error_of(with(backends, "backends = [\"cpu\", \"tpu\"]")), "build.backends"));
  EXPECT_TRUE(names_key(error_of(with(backends, "backends = [\"cpu\", \"cpu\"]")), "build.backends"));
  EXPECT_TRUE(names_key(error_of(with(backends, "backends = []")), "build.backends"));
  EXPECT_TRUE(names_key(error_of(with(backends, "backends = \"cpu\"")), "build.backends"));
}

TEST(ManifestRules, Fp8WithoutQuantization) {
  std::string text = with("precision = \"fp16\"", "precision = \"fp8\"");
  EXPECT_NO_THROW(testing::parse_and_validate(text));
  text.erase(text.find("[quantization]"));
  const std::string message = error_of(text);
  EXPECT_TRUE(names_key(message, "quantization"));
  EXPECT_TRUE(contains(message, "because build.precision is fp8")) << message;
}

TEST(ManifestRules, EmptyRecipe) {
  const std::string message = error_of(with("recipe = \"all\"", "recipe = \"\""));
  EXPECT_TRUE(names_key(message, "quantization.recipe"));
  EXPECT_TRUE(names_key(error_of(with("recipe = \"all\"", "recipe = \"  \"")), "quantization.recipe"));
}

TEST(ManifestRules, RecipeMayBeAPattern) {
  EXPECT_NO_THROW(testing::parse_and_validate(with("recipe = \"all\"", "recipe = \"layer[1-3].*.conv2\"")));
}

TEST(ManifestRules, CalibrationImagesArePositive) {
  const std::string message = error_of(with("calibration_images = 500", "calibration_images = 0"));
  EXPECT_TRUE(names_key(message, "quantization.calibration_images"));
}

TEST(ManifestRules, QuantizationKeysAreRequired) {
  const std::string message = error_of(with("weights = \"per-channel\"\n", ""));
  EXPECT_TRUE(names_key(message, "quantization.weights"));
}

}  // namespace
}  // namespace kiln
