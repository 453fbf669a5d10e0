// A write that fails for any reason leaves the plan that was there as it was, and no temporary file.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"

namespace kiln {
namespace {

using plan_test::TempDir;

class PlanWriteFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    write_plan(path(), plan_test::every_op_plan());
    before_ = plan_test::read_bytes(path());
    ASSERT_FALSE(before_.empty());
  }

  std::filesystem::path path() const { return dir_ / "model.kplan"; }

  void expect_untouched() const {
    EXPECT_EQ(plan_test::read_bytes(path()), before_) << "the existing plan changed";
    EXPECT_EQ(dir_.entries(), std::vector<std::string>{"model.kplan"}) << "a temporary file was left behind";
    EXPECT_NO_THROW(read_plan(path()));
  }

  TempDir dir_;
  std::vector<std::byte> before_;
};

TEST_F(PlanWriteFailure, WriterThrowingMidway) {
  EXPECT_THROW(write_file_atomically(path(),
                                     [](std::ostream& out) {
                                       out << std::string(100000, 'x');
                                       out.flush();
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  expect_untouched();
}

TEST_F(PlanWriteFailure, PlanThatCannotBeWritten) {
  Plan plan = plan_test::every_op_plan();
  plan.info.layer_data["missing.layer"] = 1;
  EXPECT_THROW(write_plan(path(), plan), Error);
  expect_untouched();
}

TEST_F(PlanWriteFailure, StreamThatFails) {
  // The file's stream failing midway (a full disk) is reported and cleaned up like a throw.
  EXPECT_THROW(write_file_atomically(path(),
                                     [](std::ostream& out) {
                                       out << "partial";
                                       out.setstate(std::ios::badbit);
                                     }),
               Error);
  expect_untouched();
}

TEST_F(PlanWriteFailure, MissingDestinationFolder) {
  const auto target = dir_ / "no_such_folder" / "model.kplan";
  try {
    write_plan(target, plan_test::every_op_plan());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(target.string() + ": folder '", 0), 0u) << message;
    EXPECT_NE(message.find("' does not exist"), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "no_such_folder"));
  expect_untouched();
}

TEST_F(PlanWriteFailure, DestinationIsAFolder) {
  std::filesystem::create_directory(dir_ / "folder.kplan");
  EXPECT_THROW(write_plan(dir_ / "folder.kplan", plan_test::every_op_plan()), Error);
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "folder.kplan"));
  std::filesystem::remove(dir_ / "folder.kplan");
  expect_untouched();
}

TEST_F(PlanWriteFailure, SuccessfulRewriteReplacesThePlan) {
  Plan plan = plan_test::every_op_plan();
  plan.info.opt_level = 1;
  write_plan(path(), plan);
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"model.kplan"});
  EXPECT_NE(plan_test::read_bytes(path()), before_);
  EXPECT_EQ(read_plan(path()).info.opt_level, 1);
}

}  // namespace
}  // namespace kiln
