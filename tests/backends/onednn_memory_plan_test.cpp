// The activation memory planner: buffers alive at the same step never overlap, buffers that are not
// reuse memory, offsets are aligned.
#include <gtest/gtest.h>

#if KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/memory_plan.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_ONEDNN
using onednn::BufferLifetime;
using onednn::plan_memory;

bool overlap(std::size_t a, std::size_t a_size, std::size_t b, std::size_t b_size) {
  return a < b + b_size && b < a + a_size;
}

TEST(MemoryPlanTest, LiveBuffersNeverOverlapAndDeadOnesAreReused) {
  // A chain where each value is read by the next step only, plus a long-lived one.
  const std::vector<BufferLifetime> buffers = {{1000, 0, 1}, {2000, 1, 2}, {1000, 2, 3},
                                               {2000, 3, 4}, {500, 0, 4},  {64, 2, 2}};
  const auto plan = plan_memory(buffers, 64);
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.total_bytes);
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      const bool live_together = buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last;
      if (live_together) {
        EXPECT_FALSE(overlap(plan.offsets[i], buffers[i].bytes, plan.offsets[j], buffers[j].bytes))
            << i << ", " << j;
      }
    }
  }
  std::size_t sum = 0;
  for (const auto& b : buffers) sum += b.bytes;
  EXPECT_LT(plan.total_bytes, sum);  // something was reused
  // The peak of live bytes (steps 2 and 3 hold 2000 + 1000 + 500 (+ 64)) bounds the arena from below.
  EXPECT_GE(plan.total_bytes, 3564u);
}

TEST(MemoryPlanTest, DisjointLifetimesShareOneRange) {
  const auto plan = plan_memory({{4096, 0, 0}, {4096, 1, 1}, {4096, 2, 2}}, 64);
  EXPECT_EQ(plan.total_bytes, 4096u);
}

TEST(MemoryPlanTest, EmptyPlan) { EXPECT_EQ(plan_memory({}, 64).total_bytes, 0u); }
#else
TEST(MemoryPlanTest, Skipped) { GTEST_SKIP() << "the oneDNN backend is not built (KILN_ONEDNN is off)"; }
#endif

}  // namespace
}  // namespace kiln
