// Detector plans through the kiln binary: build (fp32, fp16, FP8 with letterboxed calibration), run on
// photos and letterboxed .npy input with --draw and --json, bench, eval's box parity, and the one-line
// errors for inputs that do not fit. The golden yolov10n is trained on Fashion-MNIST items, which the
// shipped photos do not hold: its scores on them are small (below 0.02), so --min-score is low.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "io/npy.h"

namespace kiln::testing {
namespace {

const fs::path kYolo = kData / "golden" / "yolov10n";

std::string build_command(const fs::path& checkpoint, const fs::path& plan, const std::string& extra) {
  return "build " + (kFamilies / "yolov10").string() + " --checkpoint " + checkpoint.string() + " -o " +
         plan.string() + " --backend cpu " + extra;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

class DetectorPlanCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new Scratch();
    for (const char* precision : {"fp32", "fp16"}) {
      const auto built = run_kiln(build_command(kYolo / "model.safetensors", plan(precision),
                                                std::string("--precision ") + precision));
      ASSERT_EQ(built.exit_code, 0) << built.output;
    }
  }
  static void TearDownTestSuite() { delete scratch_; }
  static fs::path plan(const std::string& precision) {
    return scratch_->dir() / ("det_" + precision + ".kplan");
  }
  static Scratch* scratch_;
};

Scratch* DetectorPlanCli::scratch_ = nullptr;

TEST_F(DetectorPlanCli, RunsPhotosWithNamesDrawingsAndJson) {
  const fs::path json = scratch_->dir() / "boxes.json", png = scratch_->dir() / "boxes.png";
  const auto result = run_kiln("run " + plan("fp32").string() + " --input " + (kPhotos / "dog.jpg").string() +
                               " --min-score 0.005 --json " + json.string() + " --draw " + png.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The authors' top detection for dog.jpg, in the photo's pixels (as tests/cli/cli_test.cpp's checkpoint
  // run).
  EXPECT_NE(result.output.find("Ankle boot (9)  [385.8, 250.3, 470.5, 328.5]"), std::string::npos)
      << result.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report.at("family"), "yolov10");
  EXPECT_EQ(report.at("results").at(0).at("detections").at(0).at("name"), "Ankle boot");
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 1000u);
}

// The authors' letterboxed dog.jpg and horses.jpg as the detector's input tensor (RGB / 255): the same
// top box as the photo, in letterbox pixels.
TEST_F(DetectorPlanCli, RunsALetterboxedNpyInInputPixels) {
  expect_one_line_error(
      run_kiln("run " + plan("fp32").string() + " --input " + (kYolo / "input_u8.npy").string()),
      "input_u8.npy: expected float32 data, got");
  const Tensor bytes = read_npy(kYolo / "input_u8.npy");
  Tensor x(DType::kF32, bytes.shape());
  for (std::size_t i = 0; i < x.f32().size(); ++i)
    x.mutable_f32()[i] = bytes.data<std::uint8_t>()[i] / 255.0f;
  const fs::path npy = scratch_->dir() / "letterboxed.npy";
  write_npy(npy, x);
  const auto result =
      run_kiln("run " + plan("fp32").string() + " --input " + npy.string() + " --min-score 0.005");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("letterboxed.npy[1] (320x320, letterboxed: boxes in input pixels)"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("Ankle boot (9)  [160.8, 144.3, 196.0, 176.9]"), std::string::npos)
      << result.output;
}

// The same checkpoint and options give the same bytes: fp16 as the suite built it, and FP8, whose
// calibration runs the photos through the model on several threads.
TEST_F(DetectorPlanCli, BuildingTwiceGivesByteIdenticalPlans) {
  const auto build_twice = [](const std::string& name, const std::string& options) {
    std::string bytes[2];
    for (int attempt = 0; attempt < 2; ++attempt) {
      const fs::path path = scratch_->dir() / (name + std::to_string(attempt) + ".kplan");
      const auto built = run_kiln(build_command(kYolo / "model.safetensors", path, options));
      EXPECT_EQ(built.exit_code, 0) << built.output;
      bytes[attempt] = bytes_of(path);
    }
    EXPECT_GT(bytes[0].size(), 1'000'000u) << name;
    EXPECT_TRUE(bytes[0] == bytes[1]) << name << ": the two builds differ";
  };
  build_twice("fp16_", "--precision fp16");
  build_twice("fp8_", "--precision fp8 --calib " + kPhotos.string() + " --calib-images 2 --calib-every 1");
}

TEST_F(DetectorPlanCli, BenchesADetectorPlan) {
  const fs::path json = scratch_->dir() / "bench.json";
  const auto bench = run_kiln("bench " + plan("fp16").string() +
                              " --warmup 0 --duration 0.1 --min-iterations 2 --json " + json.string());
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_EQ(read_json(json).at("precision"), "fp16");
}

TEST_F(DetectorPlanCli, EvalComparesBoxesWithAReferencePlan) {
  const fs::path json = scratch_->dir() / "eval.json";
  const auto eval =
      run_kiln("eval " + plan("fp16").string() + " --reference " + plan("fp32").string() + " --data " +
               kPhotos.string() + " --images 3 --min-score 0.005 --json " + json.string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("gate       pass"), std::string::npos) << eval.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report.at("images_evaluated"), 3);
  EXPECT_EQ(report.at("reference_kind"), "plan, fp32");
  EXPECT_GT(report.at("boxes").at("matched").get<int>(), 0);
  EXPECT_EQ(report.at("boxes").at("missing"), 0);
  EXPECT_EQ(report.at("boxes").at("extra"), 0);
  EXPECT_GE(report.at("boxes").at("worst_iou").get<double>(), 0.9);
  EXPECT_LE(report.at("boxes").at("worst_score_diff").get<double>(), 0.005);
  EXPECT_EQ(report.at("per_image").size(), 3u);
}

// FP8 calibrates on letterboxed photos; calibrated on two that hold no Fashion-MNIST item, its scores move
// more than the gate allows (|score diff| 0.048 against the gate's 0.005 on these photos), which eval
// reports and exits 1 on.
TEST_F(DetectorPlanCli, Fp8BuildCalibratesOnLetterboxedPhotosAndEvalGates) {
  const fs::path fp8 = scratch_->dir() / "det_fp8.kplan";
  const auto built = run_kiln(
      build_command(kYolo / "model.safetensors", fp8,
                    "--precision fp8 --calib " + kPhotos.string() + " --calib-images 2 --calib-every 1"));
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("FP8 convolutions"), std::string::npos) << built.output;
  const auto eval = run_kiln("eval " + fp8.string() + " --reference " + plan("fp32").string() + " --data " +
                             kPhotos.string() + " --images 3 --min-score 0.005");
  EXPECT_EQ(eval.exit_code, 1) << eval.output;
  EXPECT_NE(eval.output.find("gate       FAIL"), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("box parity with the reference fails the gate"), std::string::npos);
}

TEST_F(DetectorPlanCli, RefusesPlansAndInputsThatDoNotFit) {
  const fs::path classifier = scratch_->dir() / "cls.kplan";
  ASSERT_EQ(
      run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
               (kTiny / "model.safetensors").string() + " -o " + classifier.string() + " --precision fp32")
          .exit_code,
      0);
  const std::string dog = " --input " + (kPhotos / "dog.jpg").string();
  // A plan carries its family: --family beside one is refused, naming the plan, whichever kind it is.
  expect_one_line_error(run_kiln("run " + classifier.string() + " --family yolov10" + dog),
                        "--family applies only without a plan file, but " + classifier.string() + " is a plan");
  expect_one_line_error(run_kiln("run " + plan("fp32").string() + " --family timm_resnest" + dog),
                        "--family applies only without a plan file, but " + plan("fp32").string() + " is a plan");
  expect_one_line_error(run_kiln("eval " + classifier.string() + " --reference " + plan("fp32").string() +
                                 " --data " + kPhotos.string() + " --images 1 --no-stress"),
                        "a yolov10 detector plan; the reference of");
  expect_one_line_error(run_kiln("eval " + plan("fp32").string() + " --reference " + classifier.string() +
                                 " --data " + kPhotos.string() + " --images 1"),
                        "must be a detector plan or checkpoint");
  const fs::path text = scratch_->file("notes.jpg", "not an image");
  expect_one_line_error(run_kiln("run " + plan("fp32").string() + " --input " + text.string()),
                        "notes.jpg: not a JPEG, PNG or WebP image");
}

TEST_F(DetectorPlanCli, BuildsAtItsConfigsImageSizeAndRefusesOthers) {
  std::ifstream in(kYolo / "config.json");
  const std::string config((std::istreambuf_iterator<char>(in)), {});
  const auto with_size = [&](const std::string& size) {
    std::string text = config;
    text.replace(text.find("\"imgsz\": 320"), 12, "\"imgsz\": " + size);
    return text;
  };
  const fs::path folder = scratch_->dir() / "sizes";
  fs::create_directories(folder);
  fs::copy_file(kYolo / "model.safetensors", folder / "model.safetensors",
                fs::copy_options::overwrite_existing);
  std::ofstream(folder / "config.json") << with_size("100");
  expect_one_line_error(run_kiln(build_command(folder / "model.safetensors", folder / "x.kplan", "")),
                        "key 'imgsz': expected a multiple of 32");
  // Another multiple of 32 builds at that size (the manifest's is its Hub checkpoint's), and says so.
  std::ofstream(folder / "config.json") << with_size("416");
  const auto resized = run_kiln(build_command(folder / "model.safetensors", folder / "x.kplan", ""));
  EXPECT_EQ(resized.exit_code, 0) << resized.output;
  EXPECT_NE(resized.output.find("building at 416x416"), std::string::npos) << resized.output;
  const auto inspected = run_kiln("inspect " + (folder / "x.kplan").string());
  EXPECT_NE(inspected.output.find("images [-1, 3, 416, 416]"), std::string::npos) << inspected.output;
  // A plan carries its config: another one beside it is refused rather than silently ignored.
  expect_one_line_error(
      run_kiln("run " + plan("fp32").string() + " --config " + (folder / "config.json").string() +
               " --input " + (kPhotos / "dog.jpg").string()),
      "--config applies only without a plan file");
}

}  // namespace
}  // namespace kiln::testing
