// The kiln program as a user meets it: help, option checking, and one-line errors on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cli_runner.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::run_kiln;

const fs::path kData = fs::path(KILN_TEST_DATA_DIR);
const fs::path kTiny = kData / "golden" / "resnest_tiny";

class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("kiln_cli_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  fs::path file(const std::string& name, const std::string& contents) const {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// A single line on stderr, starting "kiln: error:", and a non-zero exit: what every bad input gets.
void expect_one_line_error(const testing::CliResult& result, const std::string& mention) {
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.rfind("kiln: error: ", 0), 0u) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  EXPECT_NE(result.output.find(mention), std::string::npos) << "expected '" << mention << "' in: " << result.output;
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const std::string command : {"", "run ", "inspect ", "preprocess "}) {
    const auto result = run_kiln(command + "--help");
    EXPECT_EQ(result.exit_code, 0) << command << result.output;
    EXPECT_NE(result.output.find("Usage"), std::string::npos) << result.output;
  }
}

TEST(Cli, RejectsUnknownFlagsAndMissingArguments) {
  EXPECT_NE(run_kiln("run --family timm_resnest --bogus").exit_code, 0);
  EXPECT_NE(run_kiln("inspect").exit_code, 0);
  EXPECT_NE(run_kiln("frobnicate").exit_code, 0);
  EXPECT_NE(run_kiln("").exit_code, 0);
}

TEST(Cli, UnknownFamilyNamesTheKnownOnes) {
  const auto result = run_kiln("run --family nonsense --checkpoint " + (kTiny / "model.safetensors").string() +
                               " --input " + (kTiny / "input.npy").string());
  expect_one_line_error(result, "timm_resnest");
}

TEST(Cli, CorruptCheckpointIsAOneLineError) {
  const Scratch scratch;
  const auto truncated = scratch.file("truncated.safetensors", "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":");
  const auto result = run_kiln("run --family timm_resnest --checkpoint " + truncated.string() + " --input " +
                               (kTiny / "input.npy").string());
  expect_one_line_error(result, "truncated.safetensors");
}

TEST(Cli, WrongFamilyForCheckpointNamesAKey) {
  const auto result = run_kiln("run --family timm_resnet --checkpoint " + (kTiny / "model.safetensors").string() +
                               " --input " + (kTiny / "input.npy").string());
  expect_one_line_error(result, "key");
}

TEST(Cli, BadInputsAreOneLineErrors) {
  const Scratch scratch;
  const auto not_an_image = scratch.file("notes.jpg", "this is text, not a JPEG");
  expect_one_line_error(run_kiln("run --family timm_resnest --checkpoint " + (kTiny / "model.safetensors").string() +
                                 " --input " + not_an_image.string()),
                        "notes.jpg");
  const auto bad_npy = scratch.file("bad.npy", "\x93NUMPY garbage");
  expect_one_line_error(run_kiln("run --family timm_resnest --checkpoint " + (kTiny / "model.safetensors").string() +
                                 " --input " + bad_npy.string()),
                        "bad.npy");
}

TEST(Cli, RunPrintsTopKForPhotos) {
  const auto result = run_kiln("run --family timm_resnest --checkpoint " + (kTiny / "model.safetensors").string() +
                               " --input " + (kData / "photos" / "dog.jpg").string() + " --topk 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("dog.jpg"), std::string::npos);
  EXPECT_NE(result.output.find("  3. "), std::string::npos) << result.output;
}

TEST(Cli, InspectListsTensorsAndGraph) {
  const auto tensors = run_kiln("inspect " + (kTiny / "model.safetensors").string());
  ASSERT_EQ(tensors.exit_code, 0) << tensors.output;
  EXPECT_NE(tensors.output.find("fc.weight"), std::string::npos);
  const auto graph = run_kiln("inspect --family timm_resnest " + (kTiny / "model.safetensors").string());
  ASSERT_EQ(graph.exit_code, 0) << graph.output;
  EXPECT_NE(graph.output.find("radix_softmax"), std::string::npos);
}

}  // namespace
}  // namespace kiln
