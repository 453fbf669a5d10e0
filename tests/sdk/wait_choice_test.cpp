// The table by which kiln chooses how OpenMP threads wait, and how many run, when a process starts
// (src/sdk/wait_choice.h).
#include "sdk/wait_choice.h"

#include <gtest/gtest.h>

namespace {

kiln_machine_work work(int cores, int runnable_others, double load_average) {
  return {cores, runnable_others, load_average};
}

void expect_choice(kiln_wait_choice choice, kiln_waits waits, int threads) {
  EXPECT_EQ(choice.waits, waits);
  EXPECT_EQ(choice.threads, threads);
}

TEST(WaitChoice, TheUsersChoiceWinsWhateverTheMachine) {
  expect_choice(kiln_choose_waits(1, work(2, 0, 0.1)), KILN_WAITS_USER, 0);
  expect_choice(kiln_choose_waits(1, work(2, 5, 7.0)), KILN_WAITS_USER, 0);
  expect_choice(kiln_choose_waits(1, work(0, -1, -1.0)), KILN_WAITS_USER, 0);
}

TEST(WaitChoice, AnIdleMachineSpinsWithEveryCore) {
  expect_choice(kiln_choose_waits(0, work(2, 0, 0.0)), KILN_WAITS_SPIN, 0);
  expect_choice(kiln_choose_waits(0, work(2, 0, 0.99)), KILN_WAITS_SPIN, 0);  // less than a core's worth
  expect_choice(kiln_choose_waits(0, work(64, 0, 0.5)), KILN_WAITS_SPIN, 0);
}

TEST(WaitChoice, OtherWorkReadyToRunSleepsOnTheCoresItLeavesFree) {
  expect_choice(kiln_choose_waits(0, work(2, 1, 0.0)), KILN_WAITS_PASSIVE, 1);
  expect_choice(kiln_choose_waits(0, work(2, 2, 0.5)), KILN_WAITS_PASSIVE, 1);  // two busy processes
  expect_choice(kiln_choose_waits(0, work(2, 9, 8.0)), KILN_WAITS_PASSIVE, 1);  // never fewer than one
  expect_choice(kiln_choose_waits(0, work(64, 3, 2.0)), KILN_WAITS_PASSIVE, 61);
}

TEST(WaitChoice, TheLastMinutesLoadCountsThoughNothingWasReadyThisInstant) {
  expect_choice(kiln_choose_waits(0, work(2, 0, 1.0)), KILN_WAITS_PASSIVE, 1);
  expect_choice(kiln_choose_waits(0, work(2, 0, 4.7)), KILN_WAITS_PASSIVE, 1);
  expect_choice(kiln_choose_waits(0, work(64, 0, 12.3)), KILN_WAITS_PASSIVE, 52);
  expect_choice(kiln_choose_waits(0, work(64, 20, 12.3)), KILN_WAITS_PASSIVE, 44);  // the larger counts
  expect_choice(kiln_choose_waits(0, work(1, 0, 1.0)), KILN_WAITS_PASSIVE, 1);
}

TEST(WaitChoice, AMachineThatCannotBeReadSleepsWithOpenMpsDefaultTeam) {
  expect_choice(kiln_choose_waits(0, work(0, 0, 0.0)), KILN_WAITS_PASSIVE, 0);
  expect_choice(kiln_choose_waits(0, work(2, -1, 0.0)), KILN_WAITS_PASSIVE, 0);
  expect_choice(kiln_choose_waits(0, work(2, 0, -1.0)), KILN_WAITS_PASSIVE, 0);
}

}  // namespace
