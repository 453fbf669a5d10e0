// What kiln bench's statistics mean: latency order statistics of the samples, throughput over the wall
// time of the timed runs.
#include "runtime/benchmark.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace kiln {
namespace {

// Slow outliers: most runs take 2 ms, one in ten 30 ms, and the host spent 0.1 s between runs. The
// median says 2 ms, but one second of wall time held 100 runs, not 500: throughput counts the runs.
TEST(Summarize, ThroughputIsRunsOverWallTimeNotBatchOverMedian) {
  TimedRuns timed;
  for (int i = 0; i < 100; ++i) timed.milliseconds.push_back(i % 10 == 9 ? 30.0 : 2.0);
  timed.runs = 100;
  timed.wall_seconds = 1.0;
  const LatencyStats stats = summarize(timed, 4);
  EXPECT_DOUBLE_EQ(stats.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(stats.max_ms, 30.0);
  EXPECT_DOUBLE_EQ(stats.images_per_second, 400.0);  // 100 runs x batch 4 in 1 s
  EXPECT_EQ(stats.runs, 100);
  EXPECT_DOUBLE_EQ(stats.wall_seconds, 1.0);
}

// Device samples are the mean of several graph replays: the runs counted are the replays.
TEST(Summarize, DeviceSamplesCountTheirReplays) {
  TimedRuns timed;
  timed.milliseconds = {0.5, 0.5, 0.5};
  timed.runs = 3 * kReplaysPerSample;
  timed.wall_seconds = 0.032;
  const LatencyStats stats = summarize(timed, 32);
  EXPECT_EQ(stats.iterations, 3);
  EXPECT_DOUBLE_EQ(stats.images_per_second, 3.0 * kReplaysPerSample * 32 / 0.032);
}

TEST(Summarize, RefusesAnEmptyTiming) {
  EXPECT_THROW(summarize(TimedRuns{}, 1), Error);
  TimedRuns no_wall;
  no_wall.milliseconds = {1.0};
  no_wall.runs = 1;
  EXPECT_THROW(summarize(no_wall, 1), Error);
}

}  // namespace
}  // namespace kiln
