// Outputs never over inputs: every command that writes a file refuses a path naming one it reads
// (directly, through `..`, or through a symbolic link), with one line naming both options, and leaves
// the user's file byte for byte as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_test_util.h"

namespace kiln {
namespace {

using testing::bytes_of;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::Scratch;
namespace fs = std::filesystem;

// The user's files, copied into the scratch folder so a failing guard cannot harm the test data.
struct UserFiles {
  explicit UserFiles(const Scratch& scratch)
      : checkpoint(scratch.dir() / "m.safetensors"),
        config(scratch.dir() / "config.json"),
        photo(scratch.dir() / "dog.jpg"),
        link(scratch.dir() / "link.kplan") {
    fs::copy_file(kTiny / "model.safetensors", checkpoint);
    fs::copy_file(kTiny / "config.json", config);
    fs::copy_file(kPhotos / "dog.jpg", photo);
    fs::create_symlink(checkpoint, link);
  }
  fs::path checkpoint, config, photo, link;
};

std::string build_command(const UserFiles& files, const std::string& rest) {
  return "build timm_resnest --families-dir " + kFamilies.string() + " --checkpoint " +
         files.checkpoint.string() + " " + rest;
}

TEST(OutputGuard, BuildNeverWritesOverTheCheckpoint) {
  Scratch scratch;
  const UserFiles files(scratch);
  const std::string before = bytes_of(files.checkpoint);
  const std::string dotted = (scratch.dir() / "missing" / ".." / "m.safetensors").string();
  for (const std::string& output : {files.checkpoint.string(), files.link.string(), dotted}) {
    const auto result = run_kiln(build_command(files, "-o " + output));
    expect_one_line_error(result, "-o names the same file as --checkpoint");
    EXPECT_EQ(result.exit_code, 1);
  }
  // The config read from beside the checkpoint is an input too, though no option named it.
  expect_one_line_error(run_kiln(build_command(files, "-o " + files.config.string())),
                        "-o names the same file as the config.json beside the checkpoint");
  expect_one_line_error(run_kiln("run --family timm_resnest --checkpoint " + files.checkpoint.string() +
                                 " --input " + files.photo.string() + " --json " + files.config.string()),
                        "--json names the same file as the config.json beside the checkpoint");
  EXPECT_TRUE(bytes_of(files.checkpoint) == before);
  EXPECT_TRUE(bytes_of(files.config) == bytes_of(kTiny / "config.json"));
}

TEST(OutputGuard, ReportsNeverReplaceThePlanOrTheInputs) {
  Scratch scratch;
  const UserFiles files(scratch);
  const fs::path plan = scratch.dir() / "p.kplan";
  expect_one_line_error(run_kiln(build_command(files, "-o " + plan.string() + " --json " + plan.string())),
                        "--json names the same file as -o");
  ASSERT_EQ(run_kiln(build_command(files, "-o " + plan.string())).exit_code, 0);
  const std::string plan_bytes = bytes_of(plan), photo_bytes = bytes_of(files.photo);
  const std::string run = "run " + plan.string() + " --input " + files.photo.string();
  expect_one_line_error(run_kiln(run + " --json " + files.photo.string()),
                        "--json names the same file as --input");
  expect_one_line_error(run_kiln(run + " --save-output " + plan.string()),
                        "--save-output names the same file as the plan");
  expect_one_line_error(run_kiln("bench " + plan.string() + " --duration 100ms --json " + plan.string()),
                        "--json names the same file as the plan");
  expect_one_line_error(
      run_kiln("eval " + plan.string() + " --data " + kPhotos.string() + " --json " + plan.string()),
      "--json names the same file as the plan");
  expect_one_line_error(
      run_kiln("preprocess --input " + files.photo.string() + " -o " + files.photo.string()),
      "-o names the same file as --input");
  EXPECT_TRUE(bytes_of(plan) == plan_bytes);
  EXPECT_TRUE(bytes_of(files.photo) == photo_bytes);
  // A new file beside them is written as before.
  EXPECT_EQ(run_kiln(run + " --json " + (scratch.dir() / "top5.json").string()).exit_code, 0);
}

}  // namespace
}  // namespace kiln
