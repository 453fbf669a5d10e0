// kiln build --precision int8 --depthwise-input-scales as a user meets it: per-channel input scales for
// depthwise convolutions by default, recorded in the plan's quantization record and in the calibration
// cache, per-tensor on request, and refused for other precisions and for a cache of the other kind.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::kData;
using testing::kFamilies;
using testing::kPhotos;
using testing::run_kiln;
using testing::Scratch;

const fs::path kEfficientNet = kData / "golden" / "efficientnet_tiny";

std::string int8_build(const fs::path& plan, const std::string& extra) {
  return "build " + (kFamilies / "timm_efficientnet").string() + " --checkpoint " +
         (kEfficientNet / "model.safetensors").string() + " -o " + plan.string() + " --precision int8 " +
         extra;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(CliInt8Depthwise, PerChannelByDefaultRecordedAndReproducedFromTheCache) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "int8.kplan", report = scratch.dir() / "build.json";
  const fs::path cache = scratch.dir() / "scales.json";
  const std::string calib = "--recipe all --calib " + kPhotos.string() + " --images 4 --every 1 ";
  const auto built =
      run_kiln(int8_build(plan, calib + "--calib-cache " + cache.string() + " --json " + report.string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const nlohmann::json q = read_json(report).at("quantization");
  EXPECT_EQ(q.at("depthwise_input_scales"), "per-channel");
  const auto layers = q.at("per_channel_input_layers").get<std::vector<std::string>>();
  ASSERT_FALSE(layers.empty());
  for (const std::string& layer : layers) EXPECT_TRUE(ends_with(layer, "conv_dw")) << layer;
  std::size_t depthwise = 0;
  for (const auto& layer : q.at("layers")) {
    const bool dw = ends_with(layer.at("layer").get<std::string>(), "conv_dw");
    depthwise += dw ? 1 : 0;
    EXPECT_EQ(layer.value("input_scales", "per-tensor"), dw ? "per-channel" : "per-tensor") << layer;
    if (dw) {
      EXPECT_LE(layer.at("input_scale_min").get<double>(), layer.at("input_scale").get<double>());
    }
  }
  EXPECT_EQ(depthwise, layers.size());
  const nlohmann::json cached = read_json(cache);
  EXPECT_EQ(cached.at("channel_scales").size(), layers.size());

  // The cache rebuilds the same plan without images; a per-tensor build cannot use it.
  const fs::path again = scratch.dir() / "again.kplan", again_report = scratch.dir() / "again.json";
  const auto rebuilt = run_kiln(
      int8_build(again, "--recipe all --calib-cache " + cache.string() + " --json " + again_report.string()));
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.output;
  const nlohmann::json r = read_json(again_report).at("quantization");
  EXPECT_EQ(r.at("calibration_cache").at("channel_scales"), cached.at("channel_scales"));
  EXPECT_EQ(r.at("layers"), q.at("layers"));
  expect_one_line_error(
      run_kiln(int8_build(scratch.dir() / "t.kplan",
                          "--recipe all --depthwise-input-scales per-tensor "
                          "--calib-cache " +
                              cache.string())),
      "which this build quantizes per tensor: give a new --calib-cache path, or --depthwise-input-scales "
      "per-channel");
  for (const std::string backend : {"cpu", "cpu-reference"}) {
    const auto ran = run_kiln("run " + plan.string() + " --backend " + backend + " --input " +
                              (kPhotos / "dog.jpg").string());
    EXPECT_EQ(ran.exit_code, 0) << backend << ": " << ran.output;
  }
}

TEST(CliInt8Depthwise, PerTensorOnRequestQuantizesNoChannelApart) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "int8.kplan", report = scratch.dir() / "build.json";
  const fs::path cache = scratch.dir() / "scales.json";
  const auto built =
      run_kiln(int8_build(plan, "--recipe all --calib " + kPhotos.string() +
                                    " --images 2 --depthwise-input-scales per-tensor --calib-cache " +
                                    cache.string() + " --json " + report.string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const nlohmann::json q = read_json(report).at("quantization");
  EXPECT_EQ(q.at("depthwise_input_scales"), "per-tensor");
  EXPECT_TRUE(q.at("per_channel_input_layers").empty());
  EXPECT_FALSE(read_json(cache).contains("channel_scales"));
  // The default build wants channel scales this cache does not have.
  expect_one_line_error(
      run_kiln(int8_build(scratch.dir() / "c.kplan", "--recipe all --calib-cache " + cache.string())),
      "which this int8 build quantizes per channel (only depthwise convolutions read it)");
}

TEST(CliInt8Depthwise, TheOptionIsInt8OnlyAndListedInHelp) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan";
  const std::string build = "build " + (kFamilies / "timm_efficientnet").string() + " --checkpoint " +
                            (kEfficientNet / "model.safetensors").string() + " -o " + plan.string() + " ";
  for (const std::string precision : {"fp8", "fp32", "fp16"}) {
    const std::string calib = precision == "fp8" ? "--calib " + kPhotos.string() + " " : "";
    const auto result =
        run_kiln(build + "--precision " + precision + " " + calib + "--depthwise-input-scales per-channel");
    expect_one_line_error(
        result, "--depthwise-input-scales applies only to --precision int8, but --precision " + precision +
                    " was given");
    EXPECT_EQ(result.exit_code, 2) << precision;
  }
  const auto unknown =
      run_kiln(build + "--precision int8 --calib " + kPhotos.string() + " --depthwise-input-scales per-row");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("--depthwise-input-scales"), std::string::npos) << unknown.output;
  EXPECT_FALSE(fs::exists(plan));
  const auto help = run_kiln("build --help");
  EXPECT_NE(help.output.find("--depthwise-input-scales"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("per-channel (default"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace kiln
