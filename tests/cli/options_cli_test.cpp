// Options as a user meets them: numbers bounded in words and echoed as given, options another option
// makes meaningless refused naming both, durations with units, --json FILE everywhere, old names kept.
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

std::string build(const fs::path& plan, const std::string& extra) {
  return "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
         (kTiny / "model.safetensors").string() + " -o " + plan.string() + " " + extra;
}

void expect_usage_error(const std::string& arguments, const std::string& mention) {
  const auto result = run_kiln(arguments);
  expect_one_line_error(result, mention);
  EXPECT_EQ(result.exit_code, 2) << arguments << ": " << result.output;
}

TEST(CliOptions, NumbersOutOfBoundsSayTheBoundsAndTheValueAsGiven) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan";
  expect_usage_error(build(plan, "--batch 0"), "--batch: must be between 1 and 4096, got 0");
  expect_usage_error(build(plan, "--batch 100000"), "--batch: must be between 1 and 4096, got 100000");
  expect_usage_error(build(plan, "--opt-level 9"), "--opt-level: must be between 0 and 3, got 9");
  // Any existing file passes for the plan: the bounds are checked before anything is read.
  const std::string file = (kTiny / "config.json").string(), photo = (kPhotos / "dog.jpg").string();
  expect_usage_error("bench " + file + " --threads -3", "--threads: must be between 0 and 1024, got -3");
  expect_usage_error("bench " + file + " --min-iterations 0", "--min-iterations: must be between 1");
  expect_usage_error("run --family timm_resnest --input " + photo + " --topk 0",
                     "--topk: must be between 1 and 1000, got 0");
  expect_usage_error("run --family yolov10 --input " + photo + " --min-score 1.5",
                     "--min-score: must be between 0 and 1, got 1.5");
  expect_usage_error("eval " + file + " --data d --every 0", "--every: must be between 1");
  expect_usage_error("dataset " + kPhotos.string() + " --images 0", "--images: must be between 1");
  expect_usage_error("study timm_resnest --every 1", "--every: must be between 2");
  expect_usage_error("study " + (kFamilies / "timm_resnest").string() + " --strict-precision",
                     "--strict-precision applies only to a backend that times kernels (cuda)");
  EXPECT_FALSE(fs::exists(plan));
}

// --cuda-option is the cuda backend's: refused for another backend, and each NAME=VALUE checked before the
// checkpoint is read (a usage error, exit 2, naming the option and its values). Where the cuda backend is
// not built in, --backend cuda is the unknown backend it always is; without a GPU a good option gets as far
// as the GPU.
TEST(CliOptions, CudaOptionsAreTheCudaBackendsAndCheckedFirst) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan";
  expect_usage_error(build(plan, "--cuda-option fp8-gemm=off"),
                     "--cuda-option applies only to --backend cuda, but the manifest's backend is cpu (give "
                     "--backend cuda)");
  expect_usage_error(build(plan, "--backend cpu-reference --cuda-option early-launch=off"),
                     "--cuda-option applies only to --backend cuda, but --backend cpu-reference was given");
  const auto probe = run_kiln(build(plan, "--backend cuda --cuda-option fp8-gemm=yes"));
  if (probe.output.find("kiln: error: unknown backend 'cuda'") != std::string::npos) {
    EXPECT_EQ(probe.exit_code, 1) << probe.output;
    GTEST_SKIP() << "the CUDA backend is not built";
  }
  expect_usage_error(build(plan, "--backend cuda --cuda-option fp8-gemm=yes"),
                     "--cuda-option: cuda option fp8-gemm: expected race, off or only, got 'yes'");
  expect_usage_error(build(plan, "--backend cuda --cuda-option mma-conv=off --cuda-option views=off"),
                     "--cuda-option: unknown cuda option 'views': expected fp8-gemm, fuse-quantize, "
                     "runtime-fusion, early-launch, channel-views or mma-conv");
  expect_usage_error(build(plan, "--backend cuda --cuda-option early-launch"),
                     "--cuda-option: cuda option 'early-launch': expected NAME=VALUE");
  EXPECT_FALSE(fs::exists(plan));
  const auto help = run_kiln("build --help");
  EXPECT_NE(help.output.find("fp8-gemm=race|off|only"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("channel-views=on|off"), std::string::npos) << help.output;
  if (fs::exists("/dev/nvidiactl")) return;  // a GPU would build the plan
  const auto good = run_kiln(build(plan, "--precision fp16 --backend cuda --cuda-option early-launch=off"));
  EXPECT_EQ(good.exit_code, 1) << good.output;
  EXPECT_NE(good.output.find("kiln: error: no CUDA device"), std::string::npos) << good.output;
  EXPECT_FALSE(fs::exists(plan));
}

TEST(CliOptions, Fp8OptionsOnAnotherPrecisionAreRefusedNamingBoth) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan", cache = scratch.dir() / "scales.json";
  expect_usage_error(build(plan, "--precision fp16 --recipe nose"),
                     "--recipe applies only to --precision fp8 or int8, but --precision fp16 was given");
  expect_usage_error(build(plan, "--precision fp32 --calib " + kPhotos.string()),
                     "--calib applies only to --precision fp8 or int8, but --precision fp32 was given");
  expect_usage_error(
      build(plan, "--calib-method entropy"),
      "--calib-method applies only to --precision fp8 or int8, but the manifest's precision is fp16");
  expect_usage_error(build(plan, "--precision fp16 --calib-cache " + cache.string()),
                     "--calib-cache applies only");
  const std::string fp8 = "--precision fp8 --calib " + kPhotos.string() + " --images 1 ";
  expect_usage_error(build(plan, fp8 + "--calib-method entropy --percentile 99"),
                     "--percentile applies only to --calib-method percentile, but --calib-method entropy");
  expect_usage_error(build(plan, fp8 + "--recipe nose --auto-target agreement=0.9"),
                     "--auto-target applies only to --recipe auto, but --recipe nose was given");
  expect_usage_error(build(plan, "--precision fp8 --calib-cache " + cache.string() + " --images 4"),
                     "--images applies only with --calib");
  expect_usage_error(build(plan, "--tactic-cache t.json"),
                     "--tactic-cache applies only to a backend that times kernels (cuda), but the manifest's "
                     "backend is cpu");
  expect_usage_error(
      build(plan, "--precision fp16 --strict-precision"),
      "--strict-precision applies only to --precision fp8 or int8, but --precision fp16 was given");
  for (const std::string& quantized : {fp8, "--precision int8 --calib " + kPhotos.string() + " "}) {
    expect_usage_error(build(plan, quantized + "--strict-precision"),
                       "--strict-precision applies only to a backend that times kernels (cuda), but the "
                       "manifest's backend is cpu");
  }
  expect_usage_error(build(plan, fp8 + "--opt-level 0 --backend cuda --strict-precision"),
                     "--strict-precision applies only with --opt-level 1 or more");
  expect_usage_error(build(plan, fp8 + "--recipe auto --quantize-residuals"),
                     "--quantize-residuals applies only to a recipe other than auto");
  expect_usage_error("build --list-passes --batch 2", "--list-passes prints the graph passes");
  expect_usage_error(
      build(plan, "--opt-level 0 --disable-pass fold_batch_norm"),
      "--disable-pass applies only with --opt-level 1 or more, but --opt-level 0 (no graph pass) "
      "was given");
  EXPECT_FALSE(fs::exists(plan));
  EXPECT_FALSE(fs::exists(cache)) << "a refused build writes no calibration cache";
}

TEST(CliOptions, RunEvalInspectRefuseOptionsTheyWouldIgnore) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan";
  ASSERT_EQ(run_kiln(build(plan, "")).exit_code, 0);
  const std::string photo = (kPhotos / "dog.jpg").string();
  const std::string checkpoint = (kTiny / "model.safetensors").string();
  expect_usage_error(
      "run " + plan.string() + " --input " + photo + " --config " + (kTiny / "config.json").string(),
      "--config applies only without a plan file");
  expect_usage_error("run " + plan.string() + " --input " + photo + " --min-score 0.5",
                     "--min-score applies only to detectors");
  expect_usage_error("eval " + plan.string() + " --data " + kPhotos.string() + " --map-min-score 0.01",
                     "--map-min-score applies only to detector plans");
  expect_usage_error("run --checkpoint " + checkpoint + " --input " + photo,
                     "--checkpoint applies only with --family");
  expect_usage_error("run " + plan.string() + " --input " + photo + " --tactic-cache t.json",
                     "--tactic-cache applies only to a backend that times kernels");
  expect_usage_error("eval " + plan.string() + " --data " + kPhotos.string() + " --family timm_resnet",
                     "--family applies only to a checkpoint --reference, but no --reference was given");
  expect_usage_error("inspect " + plan.string() + " --family timm_resnest",
                     "--family applies only to a checkpoint");
  expect_usage_error("inspect " + checkpoint + " --config " + (kTiny / "config.json").string(),
                     "--config applies only with --family");
  expect_usage_error("bench " + plan.string() + " --profile-iterations 3",
                     "--profile-iterations applies only with --profile");
}

TEST(CliOptions, DurationsTakeUnitsAndBareNumbersWarn) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "p.kplan", report = scratch.dir() / "bench.json";
  ASSERT_EQ(run_kiln(build(plan, "")).exit_code, 0);
  const auto timed =
      run_kiln("bench " + plan.string() + " --warmup 200ms --duration 300ms --min-iterations 1 --json " +
               report.string());
  ASSERT_EQ(timed.exit_code, 0) << timed.output;
  EXPECT_EQ(timed.output.find("without a unit"), std::string::npos) << timed.output;
  EXPECT_NE(timed.output.find("warm-up 200ms, duration 300ms"), std::string::npos) << timed.output;
  std::ifstream in(report);
  const nlohmann::json json = nlohmann::json::parse(in);
  EXPECT_DOUBLE_EQ(json.at("warmup_seconds").get<double>(), 0.2);
  const auto bare = run_kiln("bench " + plan.string() + " --warmup 0 --duration 0.1 --min-iterations 1");
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  EXPECT_NE(bare.output.find("kiln: warning: --warmup 0 without a unit is read as seconds"),
            std::string::npos)
      << bare.output;
  expect_usage_error("bench " + plan.string() + " --warmup 2h",
                     "--warmup: expected a duration such as 200ms");
  expect_usage_error("bench " + plan.string() + " --duration 0s",
                     "--duration must be between 1ms and 60min, got 0s");
}

TEST(CliOptions, JsonFileOnInspectValidateAndDataset) {
  const Scratch scratch;
  const fs::path tensors = scratch.dir() / "tensors.json", manifests = scratch.dir() / "manifests.json";
  const fs::path dataset = scratch.dir() / "dataset.json";
  const std::string checkpoint = (kTiny / "model.safetensors").string();
  ASSERT_EQ(run_kiln("inspect " + checkpoint + " --json " + tensors.string()).exit_code, 0);
  ASSERT_EQ(run_kiln("validate " + (kFamilies / "timm_resnest").string() + " --json " + manifests.string())
                .exit_code,
            0);
  ASSERT_EQ(run_kiln("dataset " + kPhotos.string() + " --json " + dataset.string()).exit_code, 0);
  for (const fs::path& path : {tensors, manifests, dataset}) {
    std::ifstream in(path);
    EXPECT_TRUE(nlohmann::json::parse(in, nullptr, false).is_object()) << path;
  }
  const auto to_stdout = run_kiln("inspect " + checkpoint + " --json -");
  EXPECT_TRUE(nlohmann::json::parse(to_stdout.output, nullptr, false).is_object()) << to_stdout.output;
  const auto old = run_kiln("dataset " + kPhotos.string() + " --json");
  EXPECT_EQ(old.exit_code, 0) << old.output;
  EXPECT_NE(old.output.find("kiln: warning: --json without FILE is the old spelling"), std::string::npos);
  const std::string before = testing::bytes_of(kTiny / "model.safetensors");
  expect_one_line_error(run_kiln("inspect " + checkpoint + " --json " + checkpoint),
                        "--json names the same file as the file");
  EXPECT_TRUE(testing::bytes_of(kTiny / "model.safetensors") == before);
}

TEST(CliOptions, OldNamesStillWorkWithAWarning) {
  const auto sampled = run_kiln("dataset " + kPhotos.string() + " --sample 2 --split-every 2");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  EXPECT_NE(sampled.output.find("kiln: warning: --sample is an old name of --images"), std::string::npos);
  EXPECT_NE(sampled.output.find("kiln: warning: --split-every is an old name of --every"), std::string::npos);
  EXPECT_NE(sampled.output.find("split    1 in 2: 1 calibration, 1 held out"), std::string::npos)
      << sampled.output;
  const auto help = run_kiln("build --help");
  EXPECT_NE(help.output.find("--images"), std::string::npos);
  EXPECT_NE(help.output.find("old name: --calib-images"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace kiln
