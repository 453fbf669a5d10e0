// kiln study -o: a folder holding a report, or a study interrupted before its report, is refused unless
// --force; --force removes the earlier study's files (and only those), so two runs never mix; the folder
// is never over the study's inputs.
#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kPhotos;
using testing::run_kiln;
using testing::Scratch;

std::string study(const fs::path& out, const std::string& variants, const std::string& extra = "") {
  return "study " + (kFamilies / "timm_resnest").string() + " --variants " + variants +
         " --rounds 1 --seconds-per-round 20ms -o " + out.string() + " " + extra;
}

TEST(StudyOutput, AReportIsReplacedOnlyWithForceAndRunsNeverMix) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  const auto first = run_kiln(study(out, "fp32,fp16,'fp8 all max'"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(fs::exists(out / "plans" / "fp8_all_max.kplan"));
  std::ofstream(out / "notes.txt") << "mine";
  const std::string report = bytes_of(out / "STUDY.md"), plan = bytes_of(out / "plans" / "fp16.kplan");

  const auto refused = run_kiln(study(out, "fp32,fp16"));
  expect_one_line_error(refused, "-o holds a study report (STUDY.md / study.json): give --force");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(bytes_of(out / "STUDY.md") == report);
  EXPECT_TRUE(bytes_of(out / "plans" / "fp16.kplan") == plan);

  const auto forced = run_kiln(study(out, "fp32,fp16", "--force"));
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_FALSE(fs::exists(out / "plans" / "fp8_all_max.kplan")) << "the earlier run's plan would mix in";
  EXPECT_TRUE(fs::exists(out / "plans" / "fp16.kplan"));
  EXPECT_EQ(bytes_of(out / "notes.txt"), "mine") << "a file no study made is kept";
  const std::string rerun = bytes_of(out / "STUDY.md");
  for (const char* given : {"--force", "--rounds 1", "--seconds-per-round 20ms", "--variants fp32,fp16"})
    EXPECT_NE(rerun.find(given), std::string::npos) << "the re-run line keeps " << given;
}

// Hidden files a writer left in `dir` or its plans/ (temp files are ".NAME.tmp-...").
std::vector<std::string> temp_files_in(const fs::path& dir) {
  std::vector<std::string> found;
  for (const fs::path& folder : {dir, dir / "plans"}) {
    std::error_code ignored;
    for (const auto& entry : fs::directory_iterator(folder, ignored)) {
      const std::string name = entry.path().filename().string();
      if (name.find(".tmp-") != std::string::npos) found.push_back(name);
    }
  }
  return found;
}

TEST(StudyOutput, AnInterruptedStudyIsReplacedWithForceAndLeavesNoTempFile) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  // SIGTERM (as Ctrl-C's SIGINT, which a shell's background job ignores) a second after the study has
  // begun writing plans, while it builds and evaluates its variants.
  const std::string marker = (out / ".kiln-study-unfinished.json").string();
  const auto interrupted = testing::run_shell(
      std::string(KILN_BINARY) + " " + study(out, "fp32,fp16") + " & pid=$!; for i in $(seq 600); do [ -e " +
      marker + " ] && break; sleep 0.1; done; sleep 1; kill -TERM $pid; wait $pid");
  if (interrupted.exit_code == 0) GTEST_SKIP() << "the study finished before the signal";
  ASSERT_EQ(interrupted.exit_code, 128 + 15) << interrupted.output;  // ended by SIGTERM, as before
  EXPECT_TRUE(temp_files_in(out).empty()) << temp_files_in(out).front();
  const auto refused = run_kiln(study(out, "fp32,fp16"));
  expect_one_line_error(refused, "-o holds a study that stopped before writing its report");
  const auto forced = run_kiln(study(out, "fp32,fp16", "--force"));
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_TRUE(fs::exists(out / "STUDY.md"));
  const auto again = run_kiln(study(out, "fp32,fp16", "--force"));
  EXPECT_EQ(again.exit_code, 0) << "a finished study is replaced as before: " << again.output;
}

TEST(StudyOutput, TheFolderIsNeverOverTheInputs) {
  const Scratch scratch;
  const fs::path photos = scratch.dir() / "photos";
  fs::create_directories(photos);
  for (const auto& entry : fs::directory_iterator(kPhotos))
    fs::copy(entry.path(), photos / entry.path().filename());
  const auto inside = run_kiln(study(photos / "report", "fp32,fp16", "--data " + photos.string()));
  expect_one_line_error(inside, "-o lies inside --data");
  EXPECT_FALSE(fs::exists(photos / "report"));
  std::ofstream(scratch.dir() / "STUDY.md") << "my notes";
  const auto over = run_kiln(study(scratch.dir(), "fp32,fp16", "--force"));
  expect_one_line_error(over, "not made by a study");
  EXPECT_EQ(bytes_of(scratch.dir() / "STUDY.md"), "my notes");
}

}  // namespace
}  // namespace kiln
