// The exit statuses `kiln --help` and the README promise: 0 on success, 2 for a usage error (an unknown,
// missing or malformed option, an unknown command), 1 for any other error; every error one line.
#include <gtest/gtest.h>

#include "cli/command_names.h"
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

const std::string kCheckpoint = (kTiny / "model.safetensors").string();
const std::string kDog = (kPhotos / "dog.jpg").string();
const std::string kResnest = (kFamilies / "timm_resnest").string();

TEST(ExitCodes, ZeroOnSuccess) {
  EXPECT_EQ(run_kiln("--version").exit_code, 0);
  EXPECT_EQ(run_kiln("build --help").exit_code, 0);
  const auto ran = run_kiln("run --family timm_resnest --checkpoint " + kCheckpoint + " --input " + kDog);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
}

TEST(ExitCodes, VersionNamesTheCommitAndTheBackendsBuiltIn) {
  const auto version = run_kiln("--version");
  ASSERT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("kiln 0."), std::string::npos) << version.output;
  EXPECT_NE(version.output.find("(commit "), std::string::npos) << version.output;
  EXPECT_NE(version.output.find("backends: "), std::string::npos) << version.output;
  EXPECT_NE(version.output.find("cpu-reference"), std::string::npos) << version.output;
}

TEST(ExitCodes, TwoForAMissingOption) {
  const Scratch scratch;
  const std::string out = " -o " + (scratch.dir() / "x.kplan").string();
  for (const auto& [arguments, mention] : std::vector<std::pair<std::string, std::string>>{
           {"build " + kResnest + out, "kiln build needs --checkpoint"},
           {"build " + kResnest + " --checkpoint " + kCheckpoint, "kiln build needs -o/--output"},
           {"build --checkpoint " + kCheckpoint + out, "kiln build needs a manifest"},
           {"run --family timm_resnest --input " + kDog, "--checkpoint is required with --family"},
           {"study " + kResnest + " --checkpoint " + kCheckpoint, "kiln study needs --data"},
           {"eval --data " + kPhotos.string(), "plan is required"}}) {
    const auto result = run_kiln(arguments);
    expect_one_line_error(result, mention);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.output;
  }
}

TEST(ExitCodes, TwoForAMalformedOrUnknownOption) {
  const std::string build = "build " + kResnest + " --checkpoint " + kCheckpoint + " -o x.kplan ";
  for (const auto& [arguments, mention] : std::vector<std::pair<std::string, std::string>>{
           {build + "--precision int4", "--precision: expected fp32, fp16, bf16, fp8 or int8, got 'int4'"},
           {build + "--precision fp8 --calib-method kl",
            "--calib-method: expected max, percentile, entropy or mse, got 'kl'"},
           {build + "--precision fp8 --fp8-fallback fp8", "--fp8-fallback: expected fp16 or fp32, got 'fp8'"},
           {build + "--backend gpu", "--backend: expected cpu, cpu-reference or cuda, got 'gpu'"},
           {"run --family timm_resnest --checkpoint " + kCheckpoint + " --input " + kDog + " --backend gpu",
            "--backend: expected cpu, cpu-reference or cuda, got 'gpu'"},
           {build + "--batch 0", "--batch: must be between 1 and 4096, got 0"},
           {build + "--colour red", "--colour"},
           {"study " + kResnest + " --variants fp32,fp16,fp16", "--variants: 'fp16' is given twice"},
           {"study " + kResnest + " --variants fp32,fp16,fp64", "study variant 'fp64'"}}) {
    const auto result = run_kiln(arguments);
    expect_one_line_error(result, mention);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.output;
  }
}

TEST(ExitCodes, TwoForAnUnknownCommandNamedWithTheNearestOne) {
  const auto typo = run_kiln("buidl timm_resnest");
  expect_one_line_error(typo, "unknown command 'buidl'; did you mean 'build'?");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(run_kiln("evla x.kplan").output.find("did you mean 'eval'?"), std::string::npos);
  const auto far = run_kiln("frobnicate");
  expect_one_line_error(far, "unknown command 'frobnicate'; the commands are build, run, bench");
  EXPECT_EQ(far.exit_code, 2);
  const auto none = run_kiln("");
  EXPECT_EQ(none.exit_code, 2) << none.output;
}

TEST(ExitCodes, OneForAnyOtherError) {
  const Scratch scratch;
  for (const auto& [arguments, mention] : std::vector<std::pair<std::string, std::string>>{
           {"run --family timm_resnest --checkpoint " + kCheckpoint + " --input " + kCheckpoint,
            "not a JPEG, PNG or WebP image"},
           {"inspect " + scratch.file("junk.kplan", "not a plan").string(), "junk.kplan"},
           {"build " + kResnest + " --checkpoint " + kDog + " -o " + (scratch.dir() / "x.kplan").string(),
            kDog}}) {
    const auto result = run_kiln(arguments);
    expect_one_line_error(result, mention);
    EXPECT_EQ(result.exit_code, 1) << arguments << "\n" << result.output;
  }
}

TEST(CommandNames, TheNearestNameIsSuggestedOnlyWhenClose) {
  const std::vector<std::string> names = {"build", "run", "bench", "inspect", "eval", "study", "dataset"};
  EXPECT_EQ(cli::nearest_name("buidl", names), "build");
  EXPECT_EQ(cli::nearest_name("biuld", names), "build");
  EXPECT_EQ(cli::nearest_name("studdy", names), "study");
  EXPECT_EQ(cli::nearest_name("ls", names), std::nullopt);
  EXPECT_EQ(cli::nearest_name("frobnicate", names), std::nullopt);
  EXPECT_EQ(cli::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(cli::edit_distance("ab", "ba"), 1u);
}

}  // namespace
}  // namespace kiln
