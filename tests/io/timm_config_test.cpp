// read_timm_config: the Hub layout, the older flat layout, defaults for absent keys, and one error per
// kind of bad value.
#include "io/timm_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "image_test_files.h"

namespace kiln {
namespace {

using testing::ScratchDir;

// A Hub config.json as timm writes it for resnest50d.in1k.
constexpr const char* kHubConfig = R"({
  "architecture": "resnest50d",
  "num_classes": 1000,
  "num_features": 2048,
  "pretrained_cfg": {
    "tag": "in1k",
    "custom_load": false,
    "input_size": [3, 224, 224],
    "fixed_input_size": false,
    "interpolation": "bilinear",
    "crop_pct": 0.875,
    "crop_mode": "center",
    "mean": [0.485, 0.456, 0.406],
    "std": [0.229, 0.224, 0.225],
    "num_classes": 1000,
    "pool_size": [7, 7],
    "first_conv": "conv1.0",
    "classifier": "fc"
  }
})";

class TimmConfig : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& text) {
    const auto path = dir_.file("config.json");
    std::ofstream(path) << text;
    return path;
  }

  ModelConfig read(const std::string& text) { return read_timm_config(write(text), ModelConfig{}); }

  // Expects read() to fail with a one-line message naming the file and containing `part`.
  void expect_error(const std::string& text, const std::string& part) {
    const auto path = write(text);
    try {
      read_timm_config(path, ModelConfig{});
      ADD_FAILURE() << "no error for: " << text;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(part), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }

  // kHubConfig with one pretrained_cfg entry replaced (or added).
  static std::string hub_with(const std::string& key, const std::string& value) {
    std::string text = kHubConfig;
    const std::string needle = "\"" + key + "\": ";
    const auto at = text.find(needle);
    if (at == std::string::npos) {
      text.insert(text.find("\"tag\""), needle + value + ",\n    ");
      return text;
    }
    const auto start = at + needle.size();
    std::size_t end = start;
    int depth = 0;
    while (depth > 0 || (text[end] != ',' && text[end] != '\n')) {
      if (text[end] == '[') ++depth;
      if (text[end] == ']') --depth;
      ++end;
    }
    return text.replace(start, end - start, value);
  }

  ScratchDir dir_;
};

TEST_F(TimmConfig, ReadsHubLayout) {
  const ModelConfig c = read(kHubConfig);
  EXPECT_EQ(c.architecture, "resnest50d");
  EXPECT_EQ(c.num_classes, 1000);
  EXPECT_TRUE(c.label_names.empty());
  EXPECT_EQ(c.preprocess.input_size, 224);
  EXPECT_EQ(c.preprocess.interpolation, Interpolation::kBilinear);
  EXPECT_EQ(c.preprocess.crop_pct, 0.875);
  EXPECT_EQ(c.preprocess.crop_mode, "center");
  EXPECT_EQ(c.preprocess.mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(c.preprocess.std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));
}

TEST_F(TimmConfig, ReadsEachPreprocessKey) {
  EXPECT_EQ(read(hub_with("input_size", "[3, 288, 288]")).preprocess.input_size, 288);
  EXPECT_EQ(read(hub_with("interpolation", "\"bicubic\"")).preprocess.interpolation, Interpolation::kBicubic);
  EXPECT_EQ(read(hub_with("interpolation", "\"nearest\"")).preprocess.interpolation, Interpolation::kNearest);
  EXPECT_EQ(read(hub_with("crop_pct", "0.95")).preprocess.crop_pct, 0.95);
  EXPECT_EQ(read(hub_with("crop_pct", "1")).preprocess.crop_pct, 1.0);
  EXPECT_EQ(read(hub_with("mean", "[0.5, 0.5, 0.5]")).preprocess.mean,
            (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(read(hub_with("std", "[1, 2, 3]")).preprocess.std, (std::array<float, 3>{1.0f, 2.0f, 3.0f}));
}

TEST_F(TimmConfig, AbsentAndNullKeysKeepDefaults) {
  ModelConfig defaults;
  defaults.architecture = "fallback";
  defaults.preprocess.input_size = 256;
  defaults.preprocess.interpolation = Interpolation::kBicubic;
  defaults.preprocess.crop_pct = 0.9;
  defaults.preprocess.mean = {0.1f, 0.2f, 0.3f};
  const ModelConfig c = read_timm_config(write(R"({"pretrained_cfg": {"crop_pct": null}})"), defaults);
  EXPECT_EQ(c.architecture, "fallback");
  EXPECT_EQ(c.num_classes, 1000);
  EXPECT_EQ(c.preprocess.input_size, 256);
  EXPECT_EQ(c.preprocess.interpolation, Interpolation::kBicubic);
  EXPECT_EQ(c.preprocess.crop_pct, 0.9);
  EXPECT_EQ(c.preprocess.mean, (std::array<float, 3>{0.1f, 0.2f, 0.3f}));
}

TEST_F(TimmConfig, ReadsFlatLayoutWithOldLabelsName) {
  const ModelConfig c = read(R"({"architecture": "resnet18", "num_classes": 2, "labels": ["cat", "dog"],
                                 "input_size": [3, 160, 160], "interpolation": "bicubic", "crop_pct": 0.9})");
  EXPECT_EQ(c.architecture, "resnet18");
  EXPECT_EQ(c.num_classes, 2);
  EXPECT_EQ(c.label_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(c.preprocess.input_size, 160);
  EXPECT_EQ(c.preprocess.interpolation, Interpolation::kBicubic);
  EXPECT_EQ(c.preprocess.crop_pct, 0.9);
}

TEST_F(TimmConfig, TopLevelNumClassesAndLabelNamesWin) {
  const ModelConfig c = read(R"({"architecture": "x", "num_classes": 3, "label_names": ["a", "b", "c"],
                                 "pretrained_cfg": {"num_classes": 1000, "label_names": ["z"]}})");
  EXPECT_EQ(c.num_classes, 3);
  EXPECT_EQ(c.label_names, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(TimmConfig, LabelNamesMayBeAnIndexMap) {
  const ModelConfig c =
      read(R"({"num_classes": 3, "label_names": {"0": "a", "2": "c"}, "pretrained_cfg": {}})");
  EXPECT_EQ(c.label_names, (std::vector<std::string>{"a", "", "c"}));
}

TEST_F(TimmConfig, DefaultLabelNamesOfAnotherHeadAreDropped) {
  ModelConfig defaults;
  defaults.label_names.assign(1000, "x");
  const ModelConfig c = read_timm_config(write(R"({"num_classes": 10, "pretrained_cfg": {}})"), defaults);
  EXPECT_EQ(c.num_classes, 10);
  EXPECT_TRUE(c.label_names.empty());
}

TEST_F(TimmConfig, ModelArgsImgSizeOverridesAFixedInputSize) {
  // timm repairs older exports of fixed-size models built with another img_size.
  const ModelConfig c = read(R"({"model_args": {"img_size": 384},
                                 "pretrained_cfg": {"input_size": [3, 224, 224], "fixed_input_size": true}})");
  EXPECT_EQ(c.preprocess.input_size, 384);
  const ModelConfig dynamic = read(R"({"model_args": {"img_size": 384},
                                       "pretrained_cfg": {"input_size": [3, 224, 224], "fixed_input_size": false}})");
  EXPECT_EQ(dynamic.preprocess.input_size, 224);
}

TEST_F(TimmConfig, ErrorsNameTheKey) {
  expect_error(hub_with("crop_pct", "\"0.9\""), "key 'pretrained_cfg.crop_pct': expected a number in (0, 1]");
  expect_error(hub_with("crop_pct", "0"), "key 'pretrained_cfg.crop_pct'");
  expect_error(hub_with("crop_pct", "1.01"), "key 'pretrained_cfg.crop_pct'");
  expect_error(hub_with("crop_pct", "-0.5"), "key 'pretrained_cfg.crop_pct'");
  expect_error(hub_with("input_size", "[224, 224]"), "key 'pretrained_cfg.input_size': expected [3, H, W]");
  expect_error(hub_with("input_size", "[3, 224, 192]"), "key 'pretrained_cfg.input_size'");
  expect_error(hub_with("input_size", "[1, 224, 224]"), "key 'pretrained_cfg.input_size'");
  expect_error(hub_with("input_size", "[3, 0, 0]"), "key 'pretrained_cfg.input_size'");
  expect_error(hub_with("input_size", "[3, 224.5, 224.5]"), "key 'pretrained_cfg.input_size'");
  expect_error(hub_with("input_size", "224"), "key 'pretrained_cfg.input_size'");
  expect_error(hub_with("interpolation", "\"area\""),
               "key 'pretrained_cfg.interpolation': expected 'bilinear'");
  expect_error(hub_with("interpolation", "\"lanczos\""), "'lanczos' is unsupported");
  expect_error(hub_with("interpolation", "3"), "key 'pretrained_cfg.interpolation': expected a string");
  expect_error(hub_with("mean", "[0.5, 0.5]"), "key 'pretrained_cfg.mean': expected a list of 3 numbers");
  expect_error(hub_with("mean", "[0.5, \"a\", 0.5]"), "key 'pretrained_cfg.mean'");
  expect_error(hub_with("mean", "0.5"), "key 'pretrained_cfg.mean'");
  expect_error(hub_with("std", "[0.2, 0, 0.2]"),
               "key 'pretrained_cfg.std': expected a list of 3 non-zero numbers");
  expect_error(hub_with("std", "[0.2, 0.2, 0.2, 0.2]"), "key 'pretrained_cfg.std'");
  expect_error(hub_with("crop_mode", "\"squash\""), "'squash' is unsupported");
  expect_error(hub_with("crop_mode", "\"border\""), "'border' is unsupported");
  expect_error(hub_with("crop_mode", "\"middle\""), "key 'pretrained_cfg.crop_mode': expected 'center'");
  expect_error(R"({"num_classes": 0, "pretrained_cfg": {}})",
               "key 'num_classes': expected a positive integer");
  expect_error(R"({"num_classes": -3, "pretrained_cfg": {}})", "key 'num_classes'");
  expect_error(R"({"num_classes": 10.5, "pretrained_cfg": {}})", "key 'num_classes'");
  expect_error(hub_with("num_classes", "\"1000\""), "key 'num_classes'");
  expect_error(R"({"pretrained_cfg": {"num_classes": "1000"}})", "key 'pretrained_cfg.num_classes'");
  expect_error(R"({"architecture": 5})", "key 'architecture': expected a string");
  expect_error(R"({"pretrained_cfg": [1]})", "key 'pretrained_cfg': expected an object");
  expect_error(R"({"model_args": {"in_chans": 1}, "pretrained_cfg": {}})", "key 'model_args.in_chans'");
}

TEST_F(TimmConfig, LabelNameErrors) {
  expect_error(R"({"num_classes": 3, "label_names": ["a", "b"], "pretrained_cfg": {}})",
               "key 'label_names': expected 3 names (num_classes), got 2");
  expect_error(R"({"num_classes": 2, "pretrained_cfg": {"label_names": ["a", "b", "c"]}})",
               "key 'pretrained_cfg.label_names': expected 2 names");
  expect_error(R"({"num_classes": 2, "label_names": ["a", 7], "pretrained_cfg": {}})",
               "key 'label_names': expected a list of strings");
  expect_error(R"({"num_classes": 2, "label_names": {"5": "a"}, "pretrained_cfg": {}})",
               "key 'label_names': expected class indices in [0, 2)");
  expect_error(R"({"num_classes": 2, "label_names": "ab", "pretrained_cfg": {}})", "key 'label_names'");
  expect_error(R"({"num_classes": 2, "labels": ["a"]})", "key 'labels': expected 2 names");
}

TEST_F(TimmConfig, InvalidJsonNamesFileAndPosition) {
  expect_error("{\"architecture\": \"x\",\n \"num_classes\": }", "line 2, column 17");
  expect_error("", "invalid JSON");
  expect_error("[1, 2]", "expected a JSON object at the top level");
}

TEST_F(TimmConfig, NumberBeyondDoubleRangeIsInvalidJson) {
  expect_error(R"({"num_classes": 1e328, "pretrained_cfg": {}})", "invalid JSON: number overflow");
  expect_error(R"({"pretrained_cfg": {"crop_pct": -1e400}})", "invalid JSON");
}

// A class count is bounded before the class-name table is sized from it.
TEST_F(TimmConfig, ClassCountAboveTheCapIsRefused) {
  expect_error(R"({"num_classes": 100000000000, "label_names": {}})",
               "key 'num_classes': expected at most 1048576 classes, got 100000000000");
  expect_error(R"({"pretrained_cfg": {"num_classes": 1048577}})", "key 'pretrained_cfg.num_classes'");
  EXPECT_EQ(
      read(R"({"num_classes": 1048576, "label_names": {"7": "x"}, "pretrained_cfg": {}})").label_names.size(),
      1048576u);
}

TEST_F(TimmConfig, MissingFile) {
  EXPECT_THROW(read_timm_config(dir_.file("absent.json"), ModelConfig{}), Error);
}

}  // namespace
}  // namespace kiln
