// kiln build and kiln study load a manifest's checkpoint through the same checks (pipeline/
// model_source.h): a checkpoint whose sha256 differs from the manifest's pin, or whose config's input
// size differs from the manifest's, fails both with the same one-line message.
#include <gtest/gtest.h>

#include <regex>

#include "cli/cli_test_util.h"
#include "core/sha256.h"

namespace kiln::testing {
namespace {

// The timm_resnest manifest with `key = value` lines replaced, its demo paths made absolute.
fs::path edited_manifest(const Scratch& scratch, const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& edits) {
  const fs::path original = kFamilies / "timm_resnest" / "manifest.toml";
  std::string text = bytes_of(original);
  for (const auto& [key, value] : edits) {
    text = std::regex_replace(text, std::regex("\n" + key + " = [^\n]*"), "\n" + key + " = " + value);
  }
  const std::string demo_root = fs::absolute(original.parent_path()).string() + "/../../";
  text = std::regex_replace(text, std::regex("\"\\.\\./\\.\\./"), "\"" + demo_root);
  return scratch.file(name, text);
}

std::string build(const fs::path& manifest, const Scratch& scratch) {
  return "build " + manifest.string() + " --checkpoint " + (kTiny / "model.safetensors").string() + " -o " +
         (scratch.dir() / "model.kplan").string();
}

std::string study(const fs::path& manifest, const Scratch& scratch) {
  return "study " + manifest.string() + " --checkpoint " + (kTiny / "model.safetensors").string() +
         " --data " + kPhotos.string() + " --variants fp16 --rounds 1 --seconds-per-round 10ms -o " +
         (scratch.dir() / "study").string();
}

TEST(ManifestChecks, AWrongSha256PinFailsBuildAndStudyAlike) {
  const Scratch scratch;
  const fs::path manifest =
      edited_manifest(scratch, "pinned.toml", {{"checkpoint_sha256", '"' + std::string(64, '0') + '"'}});
  const CliResult built = run_kiln(build(manifest, scratch));
  const CliResult studied = run_kiln(study(manifest, scratch));
  const std::string digest = sha256_file_hex(kTiny / "model.safetensors");
  expect_one_line_error(built, "model.safetensors: sha256 " + digest + " differs from the " +
                                   std::string(64, '0') + " that " + manifest.string() + " pins");
  expect_one_line_error(studied, "differs from the");
  EXPECT_EQ(built.output, studied.output);
  EXPECT_FALSE(fs::exists(scratch.dir() / "model.kplan"));
  EXPECT_FALSE(fs::exists(scratch.dir() / "study"));
}

TEST(ManifestChecks, ACheckpointOfAnotherInputSizeIsBuiltAtItsOwnWithANote) {
  const Scratch scratch;
  const fs::path manifest = edited_manifest(scratch, "size.toml", {{"size", "256"}});
  const CliResult built = run_kiln(build(manifest, scratch) + " --precision fp32");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_NE(built.output.find("kiln: note: building at 224x224, the input size of "), std::string::npos)
      << built.output;
  EXPECT_NE(built.output.find(manifest.string() + "'s 256 is for"), std::string::npos) << built.output;
  const CliResult inspected = run_kiln("inspect " + (scratch.dir() / "model.kplan").string());
  EXPECT_NE(inspected.output.find("input [-1, 3, 224, 224]"), std::string::npos) << inspected.output;
}

TEST(ManifestChecks, TheRightPinBuilds) {
  const Scratch scratch;
  const std::string digest = sha256_file_hex(kTiny / "model.safetensors");
  const fs::path manifest =
      edited_manifest(scratch, "pinned.toml", {{"checkpoint_sha256", '"' + digest + '"'}});
  const CliResult built = run_kiln(build(manifest, scratch) + " --precision fp32");
  EXPECT_EQ(built.exit_code, 0) << built.output;
  EXPECT_TRUE(fs::exists(scratch.dir() / "model.kplan"));
}

// The pin names the Hub checkpoint, so the demo study's reduced checkpoint (which the manifest itself
// names) is not held to it.
TEST(ManifestChecks, TheDemoStudyIsNotHeldToTheHubPin) {
  const Scratch scratch;
  const fs::path manifest =
      edited_manifest(scratch, "pinned.toml", {{"checkpoint_sha256", '"' + std::string(64, '0') + '"'}});
  const CliResult studied = run_kiln("study " + manifest.string() +
                                     " --variants fp16 --images 4 --every 2 --rounds 1 "
                                     "--seconds-per-round 10ms -o " +
                                     (scratch.dir() / "study").string());
  EXPECT_EQ(studied.exit_code, 0) << studied.output;
  EXPECT_TRUE(fs::exists(scratch.dir() / "study" / "STUDY.md"));
}

}  // namespace
}  // namespace kiln::testing
