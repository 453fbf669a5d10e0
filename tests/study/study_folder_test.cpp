// The study folder: an earlier report or an unfinished study refused without --force, only a study's own
// files removed with it, and no output over an input.
#include "study/study_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class StudyFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_study_folder_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plans");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& relative, const std::string& text) { std::ofstream(dir_ / relative) << text; }
  // An earlier study's files: its report lists fp16.kplan.
  void earlier_study() {
    write("STUDY.md", "# old");
    write("study.json",
          R"({"family": "timm_resnest", "variants": [{"plan": "fp16.kplan"}, {"plan": "../escape.kplan"}]})");
    write("latency.svg", "<svg/>");
    write("plans/fp16.kplan", "old plan");
  }
  fs::path dir_;
};

TEST_F(StudyFolder, AnEmptyOrNewFolderIsReady) {
  EXPECT_NO_THROW(prepare_study_folder(dir_, {dir_ / "plans" / "fp32.kplan"}, false));
  EXPECT_NO_THROW(prepare_study_folder(dir_ / "new", {dir_ / "new" / "plans" / "fp32.kplan"}, false));
}

TEST_F(StudyFolder, AReportIsRefusedWithoutForce) {
  earlier_study();
  EXPECT_THROW(prepare_study_folder(dir_, {dir_ / "plans" / "fp32.kplan"}, false), Error);
  EXPECT_TRUE(fs::exists(dir_ / "STUDY.md"));
  EXPECT_TRUE(fs::exists(dir_ / "plans" / "fp16.kplan"));
}

TEST_F(StudyFolder, ForceRemovesOnlyTheEarlierStudysFiles) {
  earlier_study();
  write("notes.txt", "mine");
  write("plans/mine.kplan", "mine");
  std::ofstream(dir_.parent_path() / "escape.kplan") << "outside";
  prepare_study_folder(dir_, {dir_ / "plans" / "fp32.kplan"}, true);
  EXPECT_FALSE(fs::exists(dir_ / "STUDY.md"));
  EXPECT_FALSE(fs::exists(dir_ / "study.json"));
  EXPECT_FALSE(fs::exists(dir_ / "latency.svg"));
  EXPECT_FALSE(fs::exists(dir_ / "plans" / "fp16.kplan"));
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "plans" / "mine.kplan"));
  EXPECT_TRUE(fs::exists(dir_.parent_path() / "escape.kplan"))
      << "a listed name outside plans/ is not removed";
  fs::remove(dir_.parent_path() / "escape.kplan");
}

TEST_F(StudyFolder, AFileNoStudyMadeIsNeverReplaced) {
  write("plans/fp32.kplan", "mine");
  EXPECT_THROW(prepare_study_folder(dir_, {dir_ / "plans" / "fp32.kplan"}, true), Error);
  fs::remove(dir_ / "plans" / "fp32.kplan");
  write("latency.svg", "mine");
  EXPECT_THROW(prepare_study_folder(dir_, {}, true), Error);
  EXPECT_TRUE(fs::exists(dir_ / "latency.svg"));
  write("STUDY.md", "my notes");
  EXPECT_THROW(prepare_study_folder(dir_, {}, true), Error) << "a STUDY.md without a study's study.json";
  EXPECT_TRUE(fs::exists(dir_ / "STUDY.md"));
}

TEST_F(StudyFolder, AnInterruptedStudyIsReplacedWithForce) {
  const std::vector<fs::path> plans = {dir_ / "plans" / "fp32.kplan", dir_ / "plans" / "fp16.kplan"};
  prepare_study_folder(dir_, plans, false);
  record_unfinished_plan(dir_, plans[0]);
  write("plans/fp32.kplan", "written before Ctrl-C");  // no report: the study never finished
  write("plans/mine.kplan", "mine");
  EXPECT_THROW(prepare_study_folder(dir_, plans, false), Error) << "an unfinished study needs --force";
  EXPECT_TRUE(fs::exists(dir_ / "plans" / "fp32.kplan"));
  prepare_study_folder(dir_, plans, true);
  EXPECT_FALSE(fs::exists(dir_ / "plans" / "fp32.kplan"));
  EXPECT_TRUE(fs::exists(dir_ / "plans" / "mine.kplan")) << "only the unfinished study's own plans go";
}

TEST_F(StudyFolder, AFinishedStudyIsNoLongerUnfinished) {
  const std::vector<fs::path> plans = {dir_ / "plans" / "fp32.kplan"};
  prepare_study_folder(dir_, plans, false);
  record_unfinished_plan(dir_, plans[0]);
  finish_study_folder(dir_);
  EXPECT_NO_THROW(prepare_study_folder(dir_, plans, false)) << "no report and no unfinished study";
}

TEST_F(StudyFolder, OutputsNeverOverInputs) {
  write("study.json", "{}");
  const std::vector<fs::path> plans = {dir_ / "plans" / "fp32.kplan"};
  EXPECT_THROW(refuse_study_folder_over_inputs(dir_, plans, {{"--checkpoint", dir_ / "study.json"}}), Error);
  EXPECT_THROW(refuse_study_folder_over_inputs(dir_ / "sub", plans, {{"--data", dir_}}), Error);
  EXPECT_THROW(refuse_study_folder_over_inputs(dir_, plans, {{"--data", dir_}}), Error);
  EXPECT_NO_THROW(refuse_study_folder_over_inputs(dir_ / "out", plans, {{"--data", dir_ / "plans"}}));
}

}  // namespace
}  // namespace kiln
