// kiln eval as a user meets it: an fp16 plan against its fp32 checkpoint, labelled folders, bad images,
// bad labels, empty folders and the sample / split options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::run_kiln;

const fs::path kData = fs::path(KILN_TEST_DATA_DIR);
const fs::path kTiny = kData / "golden" / "resnest_tiny";
const fs::path kCheckpoint = kTiny / "model.safetensors";
const fs::path kPhotos = kData / "photos";
const fs::path kFamilies = kData.parent_path().parent_path() / "families";

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool mentions(const testing::CliResult& result, const std::string& text) {
  return result.output.find(text) != std::string::npos;
}

class EvalCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = fs::temp_directory_path() / ("kiln_eval_cli_" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
    for (const char* precision : {"fp32", "fp16"}) {
      const auto built =
          run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                   kCheckpoint.string() + " --precision " + precision + " -o " + plan(precision).string());
      ASSERT_EQ(built.exit_code, 0) << built.output;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(scratch_); }

  static fs::path plan(const std::string& precision) { return scratch_ / ("tiny." + precision + ".kplan"); }

  // A folder holding `photos` copied from the shipped photos, under `sub` for each (class folders).
  static fs::path folder(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& photos) {
    const fs::path root = scratch_ / name;
    for (const auto& [sub, photo] : photos) {
      fs::create_directories(root / sub);
      fs::copy_file(kPhotos / photo, root / sub / photo, fs::copy_options::overwrite_existing);
    }
    fs::create_directories(root);
    return root;
  }

  static inline fs::path scratch_;
};

TEST_F(EvalCli, HelpExplainsEveryOption) {
  const auto result = run_kiln("eval --help");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* option :
       {"--data", "--reference", "--family", "--config", "--backend", "--batch", "--images", "--every",
        "--split", "--per-layer", "--per-layer-images", "--no-stress", "--strict", "--json", "--per-image"}) {
    EXPECT_TRUE(mentions(result, option)) << option;
  }
}

TEST_F(EvalCli, Fp16PlanAgreesWithTheFp32Checkpoint) {
  const fs::path json = scratch_ / "fp16.json";
  const auto result =
      run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() + " --reference " +
               kCheckpoint.string() + " --per-layer --per-layer-images 4 --json " + json.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(mentions(result, "16 evaluated, 0 skipped")) << result.output;
  EXPECT_TRUE(mentions(result, "top-1 agreement 100.00%")) << result.output;
  EXPECT_TRUE(mentions(result, "the 15 worst")) << result.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["precision"], "fp16");
  EXPECT_EQ(report["images"]["evaluated"], 16);
  EXPECT_EQ(report["reference"]["top1_agreement"], 1.0);
  // The bound of the golden fp16 plan tests (tests/golden): fp16 storage over ~20 layers.
  const double error = report["reference"]["relative_error"];
  EXPECT_GT(error, 0.0);
  EXPECT_LE(error, 2e-2);
  EXPECT_EQ(report["non_finite"]["nan"], 0);
  EXPECT_EQ(report["non_finite"]["inf"], 0);
  EXPECT_TRUE(report["labels"].is_null());
  EXPECT_EQ(report["stress"].size(), 13u);
  for (const auto& stress : report["stress"])
    EXPECT_TRUE(stress.contains("first_non_finite_layer")) << stress;
  const auto& per_layer = report["per_layer"];
  EXPECT_EQ(per_layer["images"], 4);
  EXPECT_GT(per_layer["compared"].get<int>(), 30);
  EXPECT_EQ(per_layer["compared"], per_layer["layers"].size());
  double previous = 1e300;
  for (const auto& layer : per_layer["layers"]) {
    ASSERT_TRUE(layer["relative_error"].is_number()) << layer;
    const double e = layer["relative_error"];
    EXPECT_LE(e, previous) << layer["name"];
    EXPECT_LE(e, 2e-2) << layer["name"];
    previous = e;
  }
  std::cout << "fp16 plan against the fp32 checkpoint on the photos: agreement "
            << report["reference"]["top1_agreement"] << ", ||y - ref|| / ||ref|| = " << error
            << ", worst layer " << per_layer["layers"][0]["name"] << " "
            << per_layer["layers"][0]["relative_error"] << "\n";
}

TEST_F(EvalCli, Fp32PlanAgainstItsOwnPlanIsExact) {
  const fs::path json = scratch_ / "fp32.json";
  const auto result =
      run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() + " --reference " +
               plan("fp32").string() + " --no-stress --batch 3 --images 8 --json " + json.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["images"]["evaluated"], 8);
  EXPECT_EQ(report["batch"], 3);
  EXPECT_EQ(report["reference"]["relative_error"], 0.0);
  EXPECT_EQ(report["reference"]["top1_agreement"], 1.0);
  EXPECT_TRUE(report["stress"].empty());
  EXPECT_TRUE(report["per_layer"].is_null());
  EXPECT_FALSE(report.contains("per_image")) << "listed only with --per-image";
}

TEST_F(EvalCli, PerImageListsEveryEvaluatedImageInOrder) {
  const fs::path json = scratch_ / "per_image.json";
  const auto result =
      run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() + " --reference " +
               plan("fp32").string() + " --no-stress --images 8 --per-image --json " + json.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json rows = read_json(json).at("per_image");
  ASSERT_EQ(rows.size(), 8u);
  int agreements = 0;
  for (const auto& row : rows) {
    EXPECT_TRUE(row.at("label").is_null());  // the photos are unlabelled
    agreements += row.at("top1") == row.at("reference_top1") ? 1 : 0;
  }
  EXPECT_EQ(agreements, read_json(json)["reference"]["top1_agreements"]);
  EXPECT_LT(rows[0].at("index").get<int>(), rows[1].at("index").get<int>());
  EXPECT_NE(
      run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() + " --per-image").exit_code, 0)
      << "--per-image needs --json";
}

TEST_F(EvalCli, SampleAndSplit) {
  const auto count = [&](const std::string& options) {
    const fs::path json = scratch_ / "split.json";
    const auto result = run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() +
                                 " --no-stress --json " + json.string() + " " + options);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return read_json(json)["images"]["evaluated"].get<int>();
  };
  EXPECT_EQ(count("--images 8 --every 4"), 6);
  EXPECT_EQ(count("--images 8 --every 4 --split held-out"), 6);
  EXPECT_EQ(count("--images 8 --every 4 --split calibration"), 2);
  EXPECT_EQ(count("--every 2 --split calibration"), 8);
  EXPECT_NE(run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() + " --split calibration")
                .exit_code,
            0);
  const fs::path json = scratch_ / "split.json";
  ASSERT_EQ(run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() +
                     " --no-stress --images 8 --every 4 --split calibration --json " + json.string())
                .exit_code,
            0);
  const nlohmann::json sample = read_json(json)["sample"];
  EXPECT_EQ(sample["images"], 8);
  EXPECT_EQ(sample["every"], 4);
  EXPECT_EQ(sample["split"], "calibration");
  EXPECT_NE(
      run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() + " --images 17").exit_code,
      0);
}

TEST_F(EvalCli, LabelledFolderGivesTopOne) {
  const fs::path data = folder(
      "labelled",
      {{"a_class", "dog.jpg"}, {"a_class", "eagle.jpg"}, {"b_class", "kite.jpg"}, {"c_class", "apple.jpg"}});
  const fs::path json = scratch_ / "labelled.json";
  const auto result =
      run_kiln("eval " + plan("fp16").string() + " --data " + data.string() + " --reference " +
               kCheckpoint.string() + " --no-stress --json " + json.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(mentions(result, "accuracy   top-1 ")) << result.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["labels"]["images"], 4);
  EXPECT_TRUE(report["labels"]["top1"].is_number());
  EXPECT_EQ(report["labels"]["top5_correct"], 4);  // three classes seen, labels 0..2, of ten
  EXPECT_EQ(report["labels"]["top1_correct"], report["reference"]["labels"]["top1_correct"]);
  // fp16 against its fp32 checkpoint: the same classes here, so no image tells them apart.
  EXPECT_TRUE(mentions(result, "top-1 minus the reference's +0.00 points, 95% interval")) << result.output;
  const nlohmann::json& difference = report["reference"]["top1_difference"];
  EXPECT_EQ(difference["images"], 4);
  EXPECT_EQ(difference["plan_only_right"], 0);
  EXPECT_EQ(difference["reference_only_right"], 0);
  EXPECT_EQ(difference["points"], 0.0);
  EXPECT_LT(difference["interval_95"][0].get<double>(), 0.0);
  EXPECT_GT(difference["interval_95"][1].get<double>(), 0.0);
}

TEST_F(EvalCli, ABadImageIsSkippedUnlessStrict) {
  const fs::path data = folder("with_bad", {{"", "dog.jpg"}, {"", "kite.jpg"}, {"", "apple.jpg"}});
  std::ofstream(data / "broken.jpg") << "this is not a JPEG";
  const auto skipped =
      run_kiln("eval " + plan("fp32").string() + " --data " + data.string() + " --no-stress");
  ASSERT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_TRUE(mentions(skipped, "skipped")) << skipped.output;
  EXPECT_TRUE(mentions(skipped, "broken.jpg")) << skipped.output;
  EXPECT_TRUE(mentions(skipped, "3 evaluated, 1 skipped")) << skipped.output;

  const auto strict =
      run_kiln("eval " + plan("fp32").string() + " --data " + data.string() + " --no-stress --strict");
  EXPECT_NE(strict.exit_code, 0) << strict.output;
  EXPECT_TRUE(mentions(strict, "kiln: error: ")) << strict.output;
  EXPECT_TRUE(mentions(strict, "broken.jpg")) << strict.output;
  EXPECT_FALSE(mentions(strict, "evaluated")) << strict.output;
}

// One line on stderr starting "kiln: error:" and a non-zero exit.
void expect_one_line_error(const testing::CliResult& result, const std::string& mention) {
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.rfind("kiln: error: ", 0), 0u) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  EXPECT_TRUE(mentions(result, mention)) << "expected '" << mention << "' in: " << result.output;
}

TEST_F(EvalCli, LabelsOutOfRangeAreAOneLineError) {
  const fs::path data = folder("out_of_range", {{"", "dog.jpg"}, {"", "kite.jpg"}});
  std::ofstream(data / "labels.txt") << "dog.jpg 3\nkite.jpg 10\n";
  expect_one_line_error(run_kiln("eval " + plan("fp32").string() + " --data " + data.string()),
                        "out of range");
}

TEST_F(EvalCli, EmptyFolderIsAOneLineError) {
  const fs::path data = scratch_ / "empty";
  fs::create_directories(data);
  expect_one_line_error(run_kiln("eval " + plan("fp32").string() + " --data " + data.string()), "no images");
}

TEST_F(EvalCli, BrokenShardIsAOneLineError) {
  const fs::path shard = scratch_ / "broken.tar";
  std::ofstream(shard) << std::string(700, 'x');
  expect_one_line_error(run_kiln("eval " + plan("fp32").string() + " --data " + shard.string()),
                        "broken.tar");
}

TEST_F(EvalCli, DamagedReferencePlanIsAOneLineError) {
  const fs::path damaged = scratch_ / "damaged.kplan";
  std::ofstream(damaged) << "KILNPLAN and nothing else";
  expect_one_line_error(run_kiln("eval " + plan("fp32").string() + " --data " + kPhotos.string() +
                                 " --reference " + damaged.string()),
                        "damaged.kplan");
}

TEST_F(EvalCli, FamilyAppliesToACheckpointReferenceOnly) {
  expect_one_line_error(run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() +
                                 " --reference " + plan("fp32").string() + " --family timm_resnest"),
                        "is a plan");
}

TEST_F(EvalCli, PerLayerNeedsAReference) {
  expect_one_line_error(
      run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() + " --per-layer"),
      "--reference");
}

TEST_F(EvalCli, ACheckpointOfAnotherFamilyIsAOneLineError) {
  expect_one_line_error(
      run_kiln("eval " + plan("fp16").string() + " --data " + kPhotos.string() + " --reference " +
               kCheckpoint.string() + " --family timm_resnet"),
      "says architecture resnest50d (family timm_resnest), but the family given is timm_resnet");
}

}  // namespace
}  // namespace kiln
