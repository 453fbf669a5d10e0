// Messages that name what the user left out or got crossed: a missing --checkpoint, a checkpoint
// without config.json (said once, the classes read from the weights), a config of another family, a
// calibration cache of another method or other images, and a batch beyond this machine's memory.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::Scratch;

const std::string kDog = (kPhotos / "dog.jpg").string();

TEST(CliMessages, AMissingCheckpointIsNamed) {
  const auto result = run_kiln("run --family timm_resnest --input " + kDog);
  expect_one_line_error(result, "--checkpoint is required with --family");
  EXPECT_EQ(result.exit_code, 2);
}

TEST(CliMessages, WithoutConfigTheDefaultsAreSaidOnceAndTheClassesComeFromTheWeights) {
  const Scratch scratch;
  const fs::path checkpoint = scratch.dir() / "model.safetensors";
  fs::copy_file(kTiny / "model.safetensors", checkpoint);
  const auto result =
      run_kiln("run --family timm_resnest --checkpoint " + checkpoint.string() + " --input " + kDog);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string note =
      "kiln: note: no config.json beside " + checkpoint.string() +
      ": using timm_resnest's defaults (resnest50d.in1k) with the 10 classes of fc.weight";
  const auto first = result.output.find(note);
  ASSERT_NE(first, std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("no config.json", first + note.size()), std::string::npos)
      << "said once: " << result.output;
  EXPECT_NE(result.output.find("class "), std::string::npos) << result.output;
}

TEST(CliMessages, AConfigOfAnotherFamilyIsNamed) {
  const auto result = run_kiln("run --family timm_resnet --checkpoint " +
                               (kTiny / "model.safetensors").string() + " --input " + kDog);
  expect_one_line_error(result,
                        "says architecture resnest50d (family timm_resnest), but the family given is "
                        "timm_resnet");
}

std::string fp8_build(const fs::path& plan, const std::string& extra) {
  return "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
         (kTiny / "model.safetensors").string() + " -o " + plan.string() + " --precision fp8 --recipe nose " +
         extra;
}

TEST(CliMessages, ACalibrationCacheRecordsItsMethodAndImagesAndRefusesOthers) {
  const Scratch scratch;
  const fs::path cache = scratch.dir() / "scales.json";
  const std::string photos = " --calib " + kPhotos.string() + " --every 1";
  ASSERT_EQ(run_kiln(fp8_build(scratch.dir() / "a.kplan",
                               photos + " --images 3 --calib-method max --calib-cache " + cache.string()))
                .exit_code,
            0);
  std::ifstream in(cache);
  const nlohmann::json recorded = nlohmann::json::parse(in);
  EXPECT_EQ(recorded.at("calibration"), "max");
  EXPECT_EQ(recorded.at("data").at("fingerprint").get<std::string>().size(), 64u);
  const std::string before = bytes_of(cache);

  const fs::path plan = scratch.dir() / "b.kplan";
  const std::string reuse = " --calib-cache " + cache.string();
  expect_one_line_error(run_kiln(fp8_build(plan, photos + " --images 3 --calib-method entropy" + reuse)),
                        "--calib-cache was calibrated with max, but --calib-method entropy was given");
  expect_one_line_error(run_kiln(fp8_build(plan, photos + " --images 2" + reuse)),
                        "--calib-cache was calibrated on other images");
  EXPECT_FALSE(fs::exists(plan));
  const auto same = run_kiln(fp8_build(plan, photos + " --images 3 --calib-method max" + reuse));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_TRUE(bytes_of(cache) == before) << "a cache read is never rewritten";

  // An older cache, without the record of its images, is used with a one-line notice.
  nlohmann::json old = recorded;
  old.erase("data");
  const fs::path old_cache = scratch.file("old.json", old.dump());
  const auto used = run_kiln(
      fp8_build(scratch.dir() / "c.kplan", photos + " --images 2 --calib-cache " + old_cache.string()));
  EXPECT_EQ(used.exit_code, 0) << used.output;
  EXPECT_NE(used.output.find("does not record its calibration images (an older cache)"), std::string::npos)
      << used.output;
}

// ulimit -v caps what the process may use: the build and bench refuse the batch instead of failing in it.
TEST(CliMessages, ABatchBeyondMemoryIsRefusedWithTheFigures) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan";
  const std::string limit = "-c 'ulimit -v 4000000 && exec " + std::string(KILN_BINARY) + " ";
  const std::string build = "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                            (kTiny / "model.safetensors").string() + " -o " + plan.string();
  const auto refused = testing::run_shell("sh " + limit + build + " --batch 4096'");
  expect_one_line_error(refused, "batch 4096 needs ~");
  EXPECT_NE(
      refused.output.find("of activations; this machine has 3.8 GiB allowed by ulimit -v: use a smaller "
                          "--batch"),
      std::string::npos)
      << refused.output;
  EXPECT_FALSE(fs::exists(plan));
  ASSERT_EQ(run_kiln(build + " --batch 1").exit_code, 0);
  const auto bench =
      testing::run_shell("sh " + limit + "bench " + plan.string() + " --batch 4096 --duration 10ms'");
  expect_one_line_error(bench, "batch 4096 needs ~");
}

}  // namespace
}  // namespace kiln
