// A loaded machine or disturbed rounds are named, so that no speed is read from such timings; an idle,
// steady timing draws no warning.
#include "runtime/machine_load.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(MachineLoad, AnIdleSteadyTimingIsSound) {
  const TimingCheck check = check_timing({{0.4, 0}, {-1.0, 0}}, 2, {0.61, 0.60, 0.63, 0.62, 0.60}, "fp16");
  EXPECT_FALSE(check.loaded());
  EXPECT_TRUE(check.outliers.empty());
}

TEST(MachineLoad, ALoadAverageAboveTheThreadsIsALoadedMachine) {
  const TimingCheck check = check_timing({{4.1, 0}}, 2, {}, "the timed runs");
  ASSERT_TRUE(check.loaded());
  EXPECT_TRUE(mentions(check.warnings, "load average was 4.10, above its 2 hardware threads"))
      << check.warnings.front();
}

TEST(MachineLoad, OnlyTheFirstSamplesLoadAverageCounts) {
  // Later samples' load averages include this process's own work of the last minute.
  EXPECT_FALSE(check_timing({{0.5, 0}, {3.0, 0}}, 2, {}, "x").loaded());
}

TEST(MachineLoad, OtherWorkReadyOnEveryCoreIsALoadedMachine) {
  const TimingCheck check = check_timing({{0.2, 2}, {-1.0, 2}}, 2, {}, "the timed runs");
  ASSERT_TRUE(check.loaded());
  EXPECT_TRUE(mentions(check.warnings, "2.0 tasks ready to run on its 2 hardware threads"));
  EXPECT_FALSE(check_timing({{0.2, 1}, {-1.0, 1}}, 2, {}, "x").loaded()) << "one busy task of two cores";
}

TEST(MachineLoad, ARoundSpreadManyTimesTheMedianIsNamedWithItsOutliers) {
  // The demo study's case: a 0.6 ms network with rounds of over a second.
  const TimingCheck check = check_timing({{0.3, 0}}, 2, {0.61, 0.60, 1370.0, 0.62, 0.60}, "fp8 nose max");
  ASSERT_TRUE(check.loaded());
  EXPECT_TRUE(mentions(check.warnings, "the round medians of fp8 nose max spread from 0.600 to 1370.000 ms"));
  ASSERT_EQ(check.outliers.size(), 1u);
  EXPECT_TRUE(mentions(check.outliers, "fp8 nose max, round 3: 1370.000 ms"));
}

TEST(MachineLoad, RoundsAreMediansOfConsecutiveRuns) {
  EXPECT_EQ(round_medians({1, 2, 3, 10, 11, 12}, 2), (std::vector<double>{2, 11}));
  EXPECT_EQ(round_medians({1, 2, 3, 4, 5, 6, 7}, 3), (std::vector<double>{1.5, 3.5, 6}));
  EXPECT_EQ(round_medians({5, 7}, 5), (std::vector<double>{6})) << "fewer than two runs a round";
  EXPECT_TRUE(round_medians({}, 5).empty());
}

TEST(MachineLoad, SamplesThisMachine) {
  const LoadSample sample = sample_load();
  EXPECT_GE(sample.load_average, 0.0);  // Linux always has /proc/loadavg
  EXPECT_GE(sample.runnable_others, 0);
  EXPECT_GT(hardware_threads(), 0);
}

TEST(MachineLoad, MergingKeepsEachLineOnce) {
  TimingCheck check = check_timing({{9.0, 0}}, 2, {}, "a");
  merge_timing_checks(check, check_timing({{9.0, 0}}, 2, {1, 1, 9}, "b"));
  EXPECT_EQ(check.warnings.size(), 2u);  // the load once, b's spread
  EXPECT_EQ(check.outliers.size(), 1u);
}

}  // namespace
}  // namespace kiln
