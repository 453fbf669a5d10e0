// The kiln program as a user meets it: help, option checking, and one-line errors on bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "cli_test_util.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "runtime/engine.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::kData;
using testing::kFamilies;
using testing::kTiny;
using testing::run_kiln;
using testing::Scratch;

TEST(Cli, HelpOnEverySubcommand) {
  for (const std::string command :
       {"", "run ", "inspect ", "preprocess ", "build ", "bench ", "validate ", "dataset ", "eval "}) {
    const auto result = run_kiln(command + "--help");
    EXPECT_EQ(result.exit_code, 0) << command << result.output;
    EXPECT_NE(result.output.find("Usage"), std::string::npos) << result.output;
  }
}

// Usage errors: one `kiln: error:` line and exit status 2, as `kiln --help` documents.
TEST(Cli, RejectsUnknownFlagsAndMissingArguments) {
  for (const std::string command :
       {"run --family timm_resnest --bogus", "inspect", "frobnicate", "", "bench x.kplan --threads x"}) {
    const auto result = run_kiln(command);
    testing::expect_one_line_error(result, "see `kiln --help`");
    EXPECT_EQ(result.exit_code, 2) << command << ": " << result.output;
  }
  EXPECT_NE(run_kiln("--help").output.find("Exit status: 0 on success, 2 for a usage error"),
            std::string::npos);
}

TEST(Cli, UnknownFamilyNamesTheKnownOnes) {
  const auto result =
      run_kiln("run --family nonsense --checkpoint " + (kTiny / "model.safetensors").string() + " --input " +
               (kTiny / "input.npy").string());
  expect_one_line_error(result, "timm_resnest");
}

TEST(Cli, CorruptCheckpointIsAOneLineError) {
  const Scratch scratch;
  const auto truncated = scratch.file("truncated.safetensors", "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":");
  const auto result = run_kiln("run --family timm_resnest --checkpoint " + truncated.string() + " --input " +
                               (kTiny / "input.npy").string());
  expect_one_line_error(result, "truncated.safetensors");
}

// Without the config.json that would name its architecture, the builder names the key that does not fit.
TEST(Cli, WrongFamilyForCheckpointNamesAKey) {
  const Scratch scratch;
  const fs::path checkpoint = scratch.dir() / "model.safetensors";
  fs::copy_file(kTiny / "model.safetensors", checkpoint);
  const auto result = run_kiln("run --family timm_resnet --checkpoint " + checkpoint.string() + " --input " +
                               (kTiny / "input.npy").string());
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("kiln: error: "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("key"), std::string::npos) << result.output;
}

TEST(Cli, BadInputsAreOneLineErrors) {
  const Scratch scratch;
  const auto not_an_image = scratch.file("notes.jpg", "this is text, not a JPEG");
  expect_one_line_error(
      run_kiln("run --family timm_resnest --checkpoint " + (kTiny / "model.safetensors").string() +
               " --input " + not_an_image.string()),
      "notes.jpg");
  const auto bad_npy = scratch.file("bad.npy", "\x93NUMPY garbage");
  expect_one_line_error(run_kiln("run --family timm_resnest --checkpoint " +
                                 (kTiny / "model.safetensors").string() + " --input " + bad_npy.string()),
                        "bad.npy");
}

TEST(Cli, RunPrintsTopKForPhotos) {
  const auto result =
      run_kiln("run --family timm_resnest --checkpoint " + (kTiny / "model.safetensors").string() +
               " --input " + (kData / "photos" / "dog.jpg").string() + " --topk 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("dog.jpg"), std::string::npos);
  EXPECT_NE(result.output.find("  3. "), std::string::npos) << result.output;
}

// The detector path: letterboxed photos through yolov10n, boxes with class names in the photo's pixels,
// JSON and PNG drawings written. The golden detector is trained to find Fashion-MNIST items, of which
// dog.jpg has none, so its scores there are small (below 0.02): a low --min-score makes boxes appear.
TEST(Cli, DetectorPrintsBoxesWithNamesAndDraws) {
  const Scratch scratch;
  const fs::path yolo = kData / "golden" / "yolov10n";
  const fs::path json = scratch.dir() / "det.json", png = scratch.dir() / "det.png";
  const auto result = run_kiln("run --family yolov10 --checkpoint " + (yolo / "model.safetensors").string() +
                               " --input " + (kData / "photos" / "dog.jpg").string() + " --min-score 0.005" +
                               " --json " + json.string() + " --draw " + png.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The authors' top detection for dog.jpg: class 9 (Ankle boot) at [160.8, 144.3, 196.0, 176.9] on the
  // 320x320 letterbox (gain 5/12, 40 rows of padding above), i.e. [385.8, 250.3, 470.5, 328.5] in the photo.
  EXPECT_NE(result.output.find("Ankle boot (9)  [385.8, 250.3, 470.5, 328.5]"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("102 checkpoint tensors unused"), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(json));
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 1000u);

  expect_one_line_error(
      run_kiln("run --family yolov10 --checkpoint " + (yolo / "model.safetensors").string() + " --input " +
               (kTiny / "input.npy").string()),
      "expected a letterboxed batch [N, 3, 320, 320], got [2, 3, 224, 224]");
  const auto config = scratch.file("config.json", R"({"model": "yolov10n.yaml", "imgsz": 320})");
  expect_one_line_error(
      run_kiln("run --family yolov10 --checkpoint " + (yolo / "model.safetensors").string() + " --config " +
               config.string() + " --input " + (kData / "photos" / "dog.jpg").string()),
      "key 'names': missing");
}

TEST(Cli, InspectListsTensorsAndGraph) {
  const auto tensors = run_kiln("inspect " + (kTiny / "model.safetensors").string());
  ASSERT_EQ(tensors.exit_code, 0) << tensors.output;
  EXPECT_NE(tensors.output.find("fc.weight"), std::string::npos);
  const auto graph = run_kiln("inspect --family timm_resnest " + (kTiny / "model.safetensors").string());
  ASSERT_EQ(graph.exit_code, 0) << graph.output;
  EXPECT_NE(graph.output.find("radix_softmax"), std::string::npos);
}

TEST(Cli, BuildThenBenchWritesStatistics) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "tiny.kplan";
  const auto built =
      run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
               (kTiny / "model.safetensors").string() + " -o " + plan.string() + " --precision fp32");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const fs::path json = scratch.dir() / "bench.json";
  const auto bench =
      run_kiln("bench " + plan.string() + " --warmup 0s --duration 200ms --min-iterations 3 --profile " +
               "--profile-iterations 2 --json " + json.string());
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_NE(bench.output.find("median"), std::string::npos) << bench.output;
  EXPECT_NE(bench.output.find("convolution"), std::string::npos) << bench.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"median_ms\"", "\"p99_ms\"", "\"images_per_second\"", "\"groups_ms\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key;
  }
  // Throughput is the timed runs' images over their wall time, which holds at least the runs' own
  // latencies (the host clock times each run inside the timed loop).
  const nlohmann::json report = nlohmann::json::parse(text);
  const nlohmann::json& latency = report.at("latency");
  const double runs = latency.at("runs").get<double>(), wall = latency.at("wall_seconds").get<double>();
  EXPECT_NEAR(latency.at("images_per_second").get<double>(), runs * report.at("batch").get<double>() / wall,
              1e-9 * runs / wall);
  EXPECT_GE(wall * 1000.0, runs * latency.at("min_ms").get<double>());
  EXPECT_EQ(latency.at("runs").get<int>(), latency.at("iterations").get<int>());
}

// --input times a given batch instead of noise (trtexec's --loadInputs): one preprocessed image repeated
// to fill the batch, or a whole batch; any other shape is a one-line error naming the file and the shape.
TEST(Cli, BenchTimesAGivenInput) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "tiny.kplan";
  ASSERT_EQ(run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                     (kTiny / "model.safetensors").string() + " -o " + plan.string() + " --precision fp32")
                .exit_code,
            0);
  const fs::path one = scratch.dir() / "dog.npy";
  ASSERT_EQ(run_kiln("preprocess --input " + (kData / "photos" / "dog.jpg").string() + " -o " + one.string())
                .exit_code,
            0);
  const std::string timing = " --warmup 0s --duration 50ms --min-iterations 2";
  const fs::path json = scratch.dir() / "bench.json";
  for (const auto& [input, batch] : {std::pair{one, 3}, std::pair{kTiny / "input.npy", 2}}) {
    const auto bench = run_kiln("bench " + plan.string() + timing + " --batch " + std::to_string(batch) +
                                " --input " + input.string() + " --json " + json.string());
    ASSERT_EQ(bench.exit_code, 0) << bench.output;
    EXPECT_NE(bench.output.find("input: " + input.string()), std::string::npos) << bench.output;
    const nlohmann::json report = nlohmann::json::parse(testing::bytes_of(json));
    EXPECT_EQ(report.at("input"), input.string());
    EXPECT_EQ(report.at("batch"), batch);
  }
  expect_one_line_error(
      run_kiln("bench " + plan.string() + timing + " --batch 4 --input " + (kTiny / "input.npy").string()),
      "--input " + (kTiny / "input.npy").string() +
          ": expected a float32 .npy of shape [1, 3, 224, 224] or [4, 3, 224, 224]");
  expect_one_line_error(
      run_kiln("bench " + plan.string() + timing + " --input " + one.string() + " --json " + one.string()),
      "--input");
}

TEST(Cli, BuildingTwiceGivesByteIdenticalPlans) {
  const Scratch scratch;
  for (const char* precision : {"fp32", "fp16"}) {
    std::string previous;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const fs::path plan = scratch.dir() / ("plan" + std::to_string(attempt) + ".kplan");
      const auto built = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                                  (kTiny / "model.safetensors").string() + " -o " + plan.string() +
                                  " --precision " + precision);
      ASSERT_EQ(built.exit_code, 0) << built.output;
      const std::string bytes = testing::bytes_of(plan);
      ASSERT_GT(bytes.size(), 100'000u);
      if (attempt == 1) {
        EXPECT_TRUE(bytes == previous) << precision << ": the two builds differ";
      }
      previous = bytes;
    }
  }
}

// The manifests' fp16 is emulated on the cpu backend and slower than fp32 there: a build that names no
// precision takes fp32 for the small golden ResNeSt (under 1 G multiply-adds per image; bf16 pays only
// above), says so in one note naming oneDNN's ISA, and the plan keeps that note for bench to report.
TEST(Cli, CpuBuildWithoutAPrecisionSaysWhichItTookAndWhy) {
  if (make_backend(default_backend())->name() != "cpu") GTEST_SKIP() << "the oneDNN backend is not built";
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "default.kplan", json = scratch.dir() / "bench.json";
  const auto built = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                              (kTiny / "model.safetensors").string() + " -o " + plan.string());
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("kiln: note: precision fp32, not the manifest's fp16"), std::string::npos)
      << built.output;
  EXPECT_NE(built.output.find("oneDNN ISA"), std::string::npos) << built.output;
  EXPECT_NE(built.output.find(", fp32, opt level"), std::string::npos) << built.output;
  const auto bench =
      run_kiln("bench " + plan.string() + " --warmup 10ms --duration 50ms --json " + json.string());
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_NE(report.at("precision_reason").get<std::string>().find("oneDNN ISA"), std::string::npos);
  EXPECT_TRUE(report.at("environment").contains("onednn_isa")) << report.dump();
}

TEST(Cli, FailedBuildKeepsTheExistingPlan) {
  const Scratch scratch;
  const auto plan = scratch.file("existing.kplan", "a plan the user already has");
  const auto result = run_kiln("build " + (kFamilies / "timm_resnet").string() + " --checkpoint " +
                               (kTiny / "model.safetensors").string() + " -o " + plan.string());
  EXPECT_NE(result.exit_code, 0);
  std::ifstream in(plan);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "a plan the user already has");
}

// A cuda plan's build times kernels on the GPU; without one (or without the backend) it fails and
// writes nothing.
TEST(Cli, BuildingForCudaWithoutAGpuWritesNoPlan) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has an NVIDIA driver (and likely a GPU)";
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "cuda.kplan";
  const auto result = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                               (kTiny / "model.safetensors").string() + " -o " + plan.string() +
                               " --precision fp16 --backend cuda");
  EXPECT_NE(result.exit_code, 0);
  const bool no_device = result.output.find("kiln: error: no CUDA device") != std::string::npos;
  const bool not_built = result.output.find("kiln: error: unknown backend 'cuda'") != std::string::npos;
  EXPECT_TRUE(no_device || not_built) << result.output;
  EXPECT_FALSE(fs::exists(plan));
}

// cuDNN's FP8 convolutions take multiples of 16 channels; this net's first block has 8. --strict-precision
// refuses such a recipe layer by name before any device is needed; without it the layer stays fp16 on cuda
// (nothing is left for the CPU fallback, so --strict-backend passes that step) and the rest needs the GPU.
TEST(Cli, StrictPrecisionRefusesRecipeLayersWithoutAnFp8Kernel) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has an NVIDIA driver (and likely a GPU)";
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "cuda.kplan";
  const std::string build = "build " + (kFamilies / "timm_efficientnet").string() + " --checkpoint " +
                            (testing::kData / "golden" / "efficientnet_tiny" / "model.safetensors").string() +
                            " -o " + plan.string() + " --precision fp8 --calib " +
                            (testing::kData / "photos").string() +
                            " --calib-images 2 --calib-every 1 --backend cuda";
  const auto strict = run_kiln(build + " --strict-precision");
  EXPECT_NE(strict.exit_code, 0);
  const bool not_built = strict.output.find("kiln: error: unknown backend 'cuda'") != std::string::npos;
  if (not_built) GTEST_SKIP() << "the CUDA backend is not built";
  EXPECT_NE(strict.output.find("kiln: error: layer 'blocks.0.0.conv_dw' cannot be FP8 on the cuda backend "
                               "(cuDNN's FP8 convolutions need channel counts that are multiples of 16"),
            std::string::npos)
      << strict.output;
  const auto lenient = run_kiln(build + " --strict-backend");
  EXPECT_NE(lenient.exit_code, 0);
  EXPECT_NE(lenient.output.find("kiln: error: no CUDA device"), std::string::npos) << lenient.output;
  EXPECT_FALSE(fs::exists(plan));
}

// int8 plans on cuda need kiln's Hopper kernel: without a GPU the build refuses them in one line before
// calibrating (the refusal names the kernel), and leaves no plan.
TEST(Cli, Int8OnCudaWithoutAHopperGpuIsRefusedBeforeCalibration) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has an NVIDIA driver (and likely a GPU)";
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "int8.kplan";
  const auto result = run_kiln("build " + (kFamilies / "timm_resnet").string() + " --checkpoint " +
                               (testing::kData / "trained" / "resnet_fashion_tiny" / "model.safetensors").string() +
                               " -o " + plan.string() + " --precision int8 --calib " +
                               (testing::kData / "photos").string() + " --backend cuda");
  EXPECT_NE(result.exit_code, 0);
  if (result.output.find("kiln: error: unknown backend 'cuda'") != std::string::npos)
    GTEST_SKIP() << "the CUDA backend is not built";
  EXPECT_NE(result.output.find("kiln: error: precision int8 on the cuda backend: its int8 convolutions run on "
                               "kiln's Hopper kernel"),
            std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("calibrated on"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(plan));
}

// --quantize-residuals reaches the build: the plan's record lists the tensor held as codes (the tiny
// ResNet's one identity block), and the cpu backend runs it as the reference does.
TEST(Cli, QuantizeResidualsHoldsTheIdentityBlocksInputAsCodes) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "fp8.kplan";
  const auto built = run_kiln("build " + (kFamilies / "timm_resnet").string() + " --checkpoint " +
                              (kData / "golden" / "resnet_tiny" / "model.safetensors").string() + " -o " +
                              plan.string() + " --precision fp8 --backend cpu --calib " + (kData / "photos").string() +
                              " --images 2 --every 1 --quantize-residuals");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const nlohmann::json record = nlohmann::json::parse(run_kiln("inspect " + plan.string() + " --json -").output);
  EXPECT_EQ(record["quantization"]["residuals_in_e4m3"], nlohmann::json::parse(R"(["layer1.0.add"])"));
  const std::string photo = (kData / "photos" / "dog.jpg").string();
  const auto cpu = run_kiln("run " + plan.string() + " --input " + photo + " --backend cpu --topk 1");
  const auto reference = run_kiln("run " + plan.string() + " --input " + photo + " --backend cpu-reference --topk 1");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  // The top class, the text after its probability (which may differ in its last printed digit).
  const auto top_class = [](const std::string& out) { return out.substr(out.rfind('%') + 1); };
  EXPECT_EQ(top_class(cpu.output), top_class(reference.output)) << cpu.output << reference.output;
}

// A plan built for a backend that times kernels (cuda) stores each layer's tactic; inspect lists them and
// other backends run the plan regardless.
TEST(Cli, InspectListsStoredTactics) {
  const Scratch scratch;
  const fs::path plain = scratch.dir() / "plain.kplan", tuned = scratch.dir() / "tuned.kplan";
  const auto built =
      run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
               (kTiny / "model.safetensors").string() + " -o " + plain.string() + " --precision fp16");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  Plan plan = read_plan(plain);
  plan.info.layer_data["conv1.0"] = {{"tactic",
                                      {{"api", "cudnn-graph"},
                                       {"key", "graph91900:f16:n1c3h224w224k8r3s3"},
                                       {"device", "NVIDIA H200"},
                                       {"fused", true},
                                       {"algorithm", 3},
                                       {"workspace", 0},
                                       {"us", 4.5}}}};
  write_plan(tuned, plan);
  const auto text = run_kiln("inspect " + tuned.string());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("tactics: 1 layers"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("conv1.0: cudnn-graph #3 fused epilogue, 4.5 us on NVIDIA H200"),
            std::string::npos)
      << text.output;
  const auto json = run_kiln("inspect " + tuned.string() + " --json -");
  EXPECT_NE(json.output.find("\"tactics\""), std::string::npos) << json.output;
  EXPECT_EQ(run_kiln("inspect " + plain.string()).output.find("tactics:"), std::string::npos);
  const auto ran = run_kiln("run " + tuned.string() + " --input " + (kTiny / "input.npy").string());
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
}

// Backend data and the quantization section are free-form JSON in the file: inspect describes what it
// can and never fails on a value of an unexpected type.
TEST(Cli, InspectToleratesMalformedTacticRecords) {
  const Scratch scratch;
  const fs::path plain = scratch.dir() / "plain.kplan", odd = scratch.dir() / "odd.kplan";
  const auto built =
      run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
               (kTiny / "model.safetensors").string() + " -o " + plain.string() + " --precision fp16");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  Plan plan = read_plan(plain);
  plan.info.layer_data["conv1.0"] = {{"tactic", 7}};
  plan.info.layer_data["conv1.3"] = {{"tactic", {{"api", 5}, {"algorithm", "x"}, {"fused", "yes"}}}};
  plan.info.quantization["auto"] = 3;
  write_plan(odd, plan);
  const auto text = run_kiln("inspect " + odd.string());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("conv1.0: not a tactic record: 7"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("conv1.3: ? #? + epilogue kernel, ? us on ?"), std::string::npos) << text.output;
  const auto json = run_kiln("inspect --json " + odd.string());
  EXPECT_EQ(json.exit_code, 0) << json.output;
}

// kiln run hands photos to the library decoded, and the library preprocesses them where the model runs
// (on the device on cuda). On the CPU backends that must change nothing: the photos give the logits, bit
// for bit, and the top-k of the batch the host makes of them (kiln preprocess's .npy), as kiln run gave
// before. Two families with other interpolations and crops; the default backend and cpu-reference.
TEST(Cli, RunOnPhotosGivesWhatTheHostPreprocessedBatchGives) {
  const Scratch scratch;
  std::string photos;
  for (const std::string name : {"dog.jpg", "chelsea.png", "kite.jpg"})
    photos += " --input " + (testing::kPhotos / name).string();
  for (const std::string family : {"timm_resnest", "timm_resnet"}) {
    const fs::path golden = kData / "golden" / (family.substr(5) + "_tiny");
    const fs::path batch = scratch.dir() / (family + ".npy");
    const auto made = run_kiln("preprocess --family " + family + " --config " +
                               (golden / "config.json").string() + photos + " -o " + batch.string());
    ASSERT_EQ(made.exit_code, 0) << made.output;
    for (const std::string backend : {"", " --backend cpu-reference"}) {
      SCOPED_TRACE(family + backend);
      const std::string run = "run --family " + family + " --checkpoint " +
                              (golden / "model.safetensors").string() + " --topk 5" + backend;
      const fs::path from_photos = scratch.dir() / "photos", from_batch = scratch.dir() / "batch";
      for (const auto& [inputs, out] :
           {std::pair{photos, from_photos}, std::pair{" --input " + batch.string(), from_batch}}) {
        const auto ran = run_kiln(run + inputs + " --save-output " + out.string() + ".npy --json " +
                                  out.string() + ".json");
        ASSERT_EQ(ran.exit_code, 0) << ran.output;
      }
      EXPECT_EQ(testing::bytes_of(from_photos.string() + ".npy"),
                testing::bytes_of(from_batch.string() + ".npy"));
      const auto results = [](const fs::path& stem) {
        return nlohmann::json::parse(testing::bytes_of(stem.string() + ".json")).at("results");
      };
      const nlohmann::json photo_results = results(from_photos), batch_results = results(from_batch);
      ASSERT_EQ(photo_results.size(), 3u);
      ASSERT_EQ(batch_results.size(), 3u);
      for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(photo_results[i].at("top"), batch_results[i].at("top")) << i;
    }
  }
}

TEST(Cli, CorruptPlanIsAOneLineError) {
  const Scratch scratch;
  const auto plan = scratch.file("corrupt.kplan", "KILNPLAN but nothing else that a plan needs");
  expect_one_line_error(run_kiln("run " + plan.string() + " --input " + (kTiny / "input.npy").string()),
                        "corrupt.kplan");
}

TEST(Cli, BadManifestIsAOneLineError) {
  const Scratch scratch;
  const auto manifest = scratch.file("manifest.toml", "[model]\nfamily = \"timm_resnest\"\nbogus = 1\n");
  expect_one_line_error(
      run_kiln("build " + manifest.string() + " --checkpoint " + (kTiny / "model.safetensors").string() +
               " -o " + (scratch.dir() / "x.kplan").string()),
      "manifest.toml");
}

}  // namespace
}  // namespace kiln
