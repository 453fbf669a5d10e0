// kiln eval of a detector plan on a labelled detection set (YOLO layout): mAP on the shipped Fashion-MNIST
// set (tests/data/fashion_detect) with the golden YOLOv10n (trained on such images: 10 classes at 320
// pixels), mAP beside box parity with --reference, and the one-line errors for sets that do not fit.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace kiln::testing {
namespace {

const fs::path kYolo = kData / "golden" / "yolov10n";
const fs::path kFashion = kData / "fashion_detect";

nlohmann::json read_json(const fs::path& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

class DetectorMapCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new Scratch();
    const auto built = run_kiln("build " + (kFamilies / "yolov10").string() + " --checkpoint " +
                                (kYolo / "model.safetensors").string() + " -o " + plan().string() +
                                " --backend cpu --precision fp32");
    ASSERT_EQ(built.exit_code, 0) << built.output;
  }
  static void TearDownTestSuite() { delete scratch_; }
  static fs::path plan() { return scratch_->dir() / "fashion_fp32.kplan"; }
  // A copy of the shipped set's first `images` images (and their labels, unless not `with_labels`).
  static fs::path small_set(const std::string& name, int images, bool with_labels) {
    const fs::path root = scratch_->dir() / name;
    fs::create_directories(root / "images" / "val");
    fs::create_directories(root / "labels" / "val");
    if (!with_labels) fs::remove_all(root / "labels");
    for (int i = 0; i < images; ++i) {
      const std::string stem = "val_00000" + std::to_string(i);
      fs::copy_file(kFashion / "images" / "val" / (stem + ".jpg"), root / "images" / "val" / (stem + ".jpg"));
      if (with_labels)
        fs::copy_file(kFashion / "labels" / "val" / (stem + ".txt"),
                      root / "labels" / "val" / (stem + ".txt"));
    }
    return root;
  }
  static Scratch* scratch_;
};

Scratch* DetectorMapCli::scratch_ = nullptr;

std::size_t label_lines(const fs::path& file) {
  std::ifstream in(file);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.empty() ? 0 : 1;
  return lines;
}

TEST_F(DetectorMapCli, ReportsMapOnTheShippedSet) {
  const fs::path json = scratch_->dir() / "map.json";
  const auto eval = run_kiln("eval " + plan().string() + " --data " + kFashion.string() +
                             " --images 10 --json " + json.string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("labels     "), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("(YOLO layout, 10 classes from "), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("mAP        @0.5 "), std::string::npos) << eval.output;
  EXPECT_EQ(eval.output.find("gate "), std::string::npos)
      << "no reference, so no box parity: " << eval.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report.at("images_evaluated"), 10);
  EXPECT_FALSE(report.contains("boxes"));
  const nlohmann::json& map = report.at("map");
  for (const char* key : {"map50", "map50_95"}) {
    EXPECT_GE(map.at(key).get<double>(), 0.0) << key;
    EXPECT_LE(map.at(key).get<double>(), 1.0) << key;
  }
  // The golden detector is trained on such images: it finds most items (mAP@0.5 0.79, mAP@0.5:0.95 0.70
  // measured on these 10 images; an untrained network's is about 0), so a broken layer shows here.
  EXPECT_GT(map.at("map50").get<double>(), 0.5);
  EXPECT_GT(map.at("map50_95").get<double>(), 0.4);
  EXPECT_EQ(map.at("min_score"), 0.001);
  ASSERT_EQ(map.at("per_class").size(), 10u);
  EXPECT_EQ(map.at("per_class").at(9).at("name"), "Ankle boot");
  // --images 10 of 200 takes every 20th image; the ground truth is their label files' lines.
  std::size_t boxes = 0;
  for (int i = 0; i < 10; ++i) {
    char stem[32];
    std::snprintf(stem, sizeof stem, "val_%06d.txt", i * 20);
    boxes += label_lines(kFashion / "labels" / "val" / stem);
  }
  EXPECT_EQ(map.at("ground_truth").get<std::size_t>(), boxes);
  EXPECT_GT(map.at("detections").get<std::size_t>(), 0u);
  std::size_t per_class = 0;
  for (const auto& entry : map.at("per_class")) per_class += entry.at("ground_truth").get<std::size_t>();
  EXPECT_EQ(per_class, boxes);
}

TEST_F(DetectorMapCli, GivesMapAndBoxParityWithAReference) {
  const fs::path json = scratch_->dir() / "both.json";
  const fs::path images = kFashion / "images" / "val";
  const auto eval =
      run_kiln("eval " + plan().string() + " --data " + images.string() + " --reference " + plan().string() +
               " --images 3 --min-score 0.005 --map-min-score 0.002 --json " + json.string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("gate       pass"), std::string::npos) << eval.output;
  // The images folder names no classes itself; the set's data.yaml above it does, and they are the ones
  // reported, never the plan's own (another set's).
  EXPECT_NE(eval.output.find("10 classes from "), std::string::npos) << eval.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report.at("map").at("min_score"), 0.002);
  EXPECT_NE(report.at("map").at("data_yaml").get<std::string>().find("data.yaml"), std::string::npos);
  EXPECT_EQ(report.at("map").at("per_class").at(9).at("name"), "Ankle boot");
  EXPECT_EQ(report.at("reference_kind"), "plan, fp32");
  EXPECT_TRUE(report.at("boxes").at("passed").get<bool>());
  EXPECT_EQ(report.at("per_image").size(), 3u);
}

TEST_F(DetectorMapCli, RefusesSetsThatDoNotFit) {
  expect_one_line_error(
      run_kiln("eval " + plan().string() + " --data " + small_set("nolabels", 1, false).string()),
      "labels/val: no labels folder for the images in");
  const fs::path bad = small_set("badline", 2, true);
  const fs::path label = bad / "labels" / "val" / "val_000001.txt";
  std::ofstream(label) << "0 0.5 0.5 0.1 0.1\n3 0.5 0.5 0.1\n";
  expect_one_line_error(run_kiln("eval " + plan().string() + " --data " + bad.string()),
                        "val_000001.txt:2: expected 5 fields (class cx cy w h), got 4");
  std::ofstream(label) << "12 0.5 0.5 0.1 0.1\n";
  expect_one_line_error(run_kiln("eval " + plan().string() + " --data " + bad.string()),
                        "val_000001.txt:1: class 12 but there are 10 class names");
  const fs::path named = small_set("threenames", 1, true);
  std::ofstream(named / "data.yaml") << "val: images/val\nnames: [a, b, c]\n";
  expect_one_line_error(run_kiln("eval " + plan().string() + " --data " + named.string()),
                        "data.yaml: 3 class names, but " + plan().string() + " detects 10 classes");
}

TEST_F(DetectorMapCli, RefusesScoreOptionsThatWouldBeIgnored) {
  const auto parity_only =
      run_kiln("eval " + plan().string() + " --data " + kFashion.string() + " --min-score 0.1");
  expect_one_line_error(parity_only, "--min-score sets the boxes box parity compares, but");
  EXPECT_EQ(parity_only.exit_code, 2);
  const auto unlabelled =
      run_kiln("eval " + plan().string() + " --data " + kPhotos.string() + " --map-min-score 0.01");
  expect_one_line_error(unlabelled, "--map-min-score sets the detections mAP ranks, but");
  EXPECT_EQ(unlabelled.exit_code, 2);
}

}  // namespace
}  // namespace kiln::testing
