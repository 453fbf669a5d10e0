// kiln build --precision fp8 as a user meets it: a plan with its quantization report, a calibration
// cache that reproduces the build, and one-line errors for bad recipes, methods, data and caches.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::Scratch;

std::string fp8_build(const fs::path& plan, const std::string& extra) {
  return "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
         (kTiny / "model.safetensors").string() + " -o " + plan.string() + " --precision fp8 " + extra;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(CliFp8, BuildRecordsRecipeScalesAndCache) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "fp8.kplan", report = scratch.dir() / "build.json";
  const fs::path cache = scratch.dir() / "calibration.json";
  const auto built = run_kiln(fp8_build(plan, "--recipe nose --calib " + kPhotos.string() +
                                                  " --images 4 --every 4 --calib-method entropy"
                                                  " --calib-cache " +
                                                  cache.string() + " --json " + report.string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("FP8 convolutions, the rest fp16"), std::string::npos) << built.output;
  // The sample is smaller than the folder and only a quarter of it calibrates: the build says so.
  EXPECT_NE(built.output.find("calibrated on 4 of 16 images in " + kPhotos.string() +
                              " (every 4th of a 16-image sample; the other 12 held out for kiln eval"),
            std::string::npos)
      << built.output;
  const nlohmann::json q = read_json(report).at("quantization");
  EXPECT_EQ(q.at("recipe"), "nose");
  EXPECT_EQ(q.at("calibration"), "entropy");
  EXPECT_EQ(q.at("calibration_images"), 4);
  EXPECT_EQ(q.at("data").at("sample"), 16);
  EXPECT_EQ(q.at("fp8_layers"), q.at("layers").size());
  for (const auto& layer : q.at("layers")) {
    const std::string name = layer.at("layer");
    EXPECT_EQ(name.find(".fc"), std::string::npos) << "nose keeps the attention gates out of FP8: " << name;
    EXPECT_GT(layer.at("input_scale").get<double>(), 0.0);
  }
  // The cache rebuilds the same graph without images.
  const nlohmann::json cached = read_json(cache);
  EXPECT_EQ(cached.at("format"), "kiln-fp8-calibration");
  const fs::path again = scratch.dir() / "again.kplan", again_report = scratch.dir() / "again.json";
  const auto rebuilt = run_kiln(
      fp8_build(again, "--recipe nose --calib-cache " + cache.string() + " --json " + again_report.string()));
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.output;
  EXPECT_EQ(read_json(again_report).at("quantization").at("layers"), q.at("layers"));
}

// --recipe auto searches on a few calibration images and checks its target again on the others: the
// build says whether it was met on each, and the plan records both.
TEST(CliFp8, AutoRecipeChecksItsTargetOnHeldOutCalibrationImages) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "auto.kplan", report = scratch.dir() / "auto.json";
  const auto built =
      run_kiln(fp8_build(plan, "--recipe auto --auto-target agreement=0.5 --calib " + kPhotos.string() +
                                   " --images 8 --every 1 --sensitivity-images 4"
                                   " --json " +
                                   report.string()));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("auto recipe: agreement>=0.5 "), std::string::npos) << built.output;
  EXPECT_NE(built.output.find(" on the 4 search images (agreement "), std::string::npos) << built.output;
  EXPECT_NE(built.output.find(" on 4 held-out calibration images (agreement "), std::string::npos)
      << built.output;
  const nlohmann::json held_out = read_json(report).at("quantization").at("auto").at("held_out");
  EXPECT_EQ(held_out.at("images"), 4);
  EXPECT_TRUE(held_out.at("meets_target").is_boolean());
  EXPECT_GE(held_out.at("agreement").get<double>(), 0.0);
}

TEST(CliFp8, RunsAndInspectsAnFp8Plan) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "fp8.kplan";
  ASSERT_EQ(run_kiln(fp8_build(plan, "--recipe all --calib " + kPhotos.string() + " --images 2")).exit_code,
            0);
  const auto ran = run_kiln("run " + plan.string() + " --input " + (kPhotos / "dog.jpg").string());
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  const auto inspected = run_kiln("inspect " + plan.string());
  EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("quantize"), std::string::npos) << inspected.output;
  EXPECT_NE(inspected.output.find("dequantize"), std::string::npos) << inspected.output;
}

TEST(CliFp8, BadSettingsAreOneLineErrors) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "fp8.kplan";
  const std::string calib = " --calib " + kPhotos.string() + " --images 1";
  expect_one_line_error(run_kiln(fp8_build(plan, "--recipe all")), "give --calib DATA");
  expect_one_line_error(run_kiln(fp8_build(plan, "--recipe everything" + calib)),
                        "recipe 'everything': expected all, nose");
  expect_one_line_error(run_kiln(fp8_build(plan, "--recipe include=layer9.*" + calib)),
                        "pattern 'layer9.*' matches none");
  expect_one_line_error(run_kiln(fp8_build(plan, "--calib-method kl" + calib)),
                        "--calib-method: expected max");
  expect_one_line_error(run_kiln(fp8_build(plan, "--fp8-fallback fp8" + calib)),
                        "--fp8-fallback: expected fp16 or fp32");
  expect_one_line_error(run_kiln(fp8_build(plan, "--recipe auto --auto-target top1=1" + calib)),
                        "auto target");
  expect_one_line_error(run_kiln(fp8_build(plan, "--calib " + (scratch.dir() / "none").string())), "none");
  const fs::path empty = scratch.dir() / "empty";
  fs::create_directories(empty);
  expect_one_line_error(run_kiln(fp8_build(plan, "--calib " + empty.string())), empty.string());
  const fs::path bad_cache = scratch.file("cache.json", "{\"format\": \"other\"}");
  expect_one_line_error(run_kiln(fp8_build(plan, "--calib-cache " + bad_cache.string())),
                        "calibration cache");
  const fs::path partial =
      scratch.file("partial.json", R"({"format": "kiln-fp8-calibration", "scales": {"maxpool": 0.1}})");
  expect_one_line_error(run_kiln(fp8_build(plan, "--calib-cache " + partial.string())), "has no scale for");
  EXPECT_FALSE(fs::exists(plan)) << "a failed build writes no plan";
}

TEST(CliFp8, OneBadImageIsSkippedUnlessStrict) {
  const Scratch scratch;
  const fs::path folder = scratch.dir() / "calib";
  fs::create_directories(folder);
  fs::copy_file(kPhotos / "dog.jpg", folder / "a.jpg");
  std::ofstream(folder / "b.jpg") << "not a jpeg";
  const fs::path plan = scratch.dir() / "fp8.kplan";
  const std::string calib = " --calib " + folder.string() + " --images 2 --every 1";
  const auto lenient = run_kiln(fp8_build(plan, calib));
  EXPECT_EQ(lenient.exit_code, 0) << lenient.output;
  EXPECT_NE(lenient.output.find("skipped"), std::string::npos) << lenient.output;
  EXPECT_NE(lenient.output.find("b.jpg"), std::string::npos) << lenient.output;
  const auto strict = run_kiln(fp8_build(scratch.dir() / "strict.kplan", calib + " --strict"));
  EXPECT_NE(strict.exit_code, 0) << strict.output;
  EXPECT_NE(strict.output.find("b.jpg"), std::string::npos) << strict.output;
}

// A calibration cache holds FP8 scales: a build of another precision would ignore it, so it is refused.
TEST(CliFp8, ACalibrationCacheOnANonFp8BuildIsAUsageError) {
  const Scratch scratch;
  const fs::path cache = scratch.dir() / "scales.json";
  const auto result =
      run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
               (kTiny / "model.safetensors").string() + " -o " + (scratch.dir() / "a.kplan").string() +
               " --precision fp16 --calib-cache " + cache.string());
  expect_one_line_error(
      result, "--calib-cache applies only to --precision fp8 or int8, but --precision fp16 was given");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_FALSE(fs::exists(scratch.dir() / "a.kplan"));
  EXPECT_FALSE(fs::exists(cache));
}

// int8 goes through the same options: its plan runs on cpu and cpu-reference, records its grid, and refuses
// a calibration cache of the other grid.
TEST(CliInt8, BuildRunsAndKeepsItsGrid) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "int8.kplan", report = scratch.dir() / "build.json";
  const fs::path cache = scratch.dir() / "int8_scales.json";
  const std::string build = "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                            (kTiny / "model.safetensors").string() + " --precision int8 ";
  const auto built = run_kiln(build + "--recipe nose --calib " + kPhotos.string() +
                              " --images 4 --calib-method mse --calib-cache " + cache.string() + " -o " +
                              plan.string() + " --json " + report.string());
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("int8 convolutions, the rest fp32"), std::string::npos) << built.output;
  const nlohmann::json q = read_json(report).at("quantization");
  EXPECT_EQ(q.at("format"), "int8");
  EXPECT_EQ(q.at("quantized_layers"), q.at("layers").size());
  EXPECT_FALSE(q.contains("fp8_layers"));
  EXPECT_FALSE(q.at("built_on").at("onednn_isa").get<std::string>().empty());
  // How this process's threads wait depends on the machine's load: not a fact of the plan.
  EXPECT_FALSE(q.at("built_on").contains("openmp_wait")) << q.at("built_on");
  EXPECT_EQ(read_json(cache).at("grid"), "int8");
  for (const std::string backend : {"cpu", "cpu-reference"}) {
    const auto ran = run_kiln("run " + plan.string() + " --backend " + backend + " --input " +
                              (kPhotos / "dog.jpg").string());
    EXPECT_EQ(ran.exit_code, 0) << backend << ": " << ran.output;
  }
  // An FP8 build on the int8 cache, and an int8 build on a cache from before grids were recorded.
  expect_one_line_error(run_kiln(fp8_build(scratch.dir() / "fp8.kplan", "--calib-cache " + cache.string())),
                        "holds int8 scales and this build is fp8-e4m3");
  const fs::path old_cache =
      scratch.file("old.json", R"({"format": "kiln-fp8-calibration", "scales": {"x": 0.1}})");
  expect_one_line_error(
      run_kiln(build + "--calib-cache " + old_cache.string() + " -o " + plan.string() + "2"),
      "records no grid, so it holds E4M3 scales");
}

}  // namespace
}  // namespace kiln
