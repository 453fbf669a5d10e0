// The activation arena planner every backend shares: buffers alive at the same step never overlap,
// buffers that are not alive together reuse memory, offsets are aligned.
#include "backends/common/arena_planner.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln {
namespace {

using backends::ArenaLayout;
using backends::BufferLifetime;
using backends::place_buffers;

bool live_together(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

bool ranges_overlap(std::size_t a, std::size_t a_size, std::size_t b, std::size_t b_size) {
  return a < b + b_size && b < a + a_size;
}

// Every offset aligned, every buffer inside the arena, no two live buffers sharing a byte.
void expect_valid(const std::vector<BufferLifetime>& buffers, const ArenaLayout& layout,
                  std::size_t alignment) {
  ASSERT_EQ(layout.offsets.size(), buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(layout.offsets[i] % alignment, 0u) << i;
    EXPECT_LE(layout.offsets[i] + buffers[i].bytes, layout.total_bytes) << i;
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      if (!live_together(buffers[i], buffers[j])) continue;
      EXPECT_FALSE(ranges_overlap(layout.offsets[i], buffers[i].bytes, layout.offsets[j], buffers[j].bytes))
          << i << ", " << j;
    }
  }
}

TEST(ArenaPlannerTest, LiveBuffersNeverOverlapAndDeadOnesAreReused) {
  // A chain where each value is read by the next step only, plus a long-lived one.
  const std::vector<BufferLifetime> buffers = {{1000, 0, 1}, {2000, 1, 2}, {1000, 2, 3},
                                               {2000, 3, 4}, {500, 0, 4},  {64, 2, 2}};
  const ArenaLayout layout = place_buffers(buffers, 64);
  expect_valid(buffers, layout, 64);
  std::size_t sum = 0;
  for (const auto& b : buffers) sum += b.bytes;
  EXPECT_LT(layout.total_bytes, sum);  // something was reused
  // The peak of live bytes (steps 2 and 3 hold 2000 + 1000 + 500 (+ 64)) bounds the arena from below.
  EXPECT_GE(layout.total_bytes, 3564u);
}

TEST(ArenaPlannerTest, DisjointLifetimesShareOneRange) {
  const ArenaLayout layout = place_buffers({{4096, 0, 0}, {4096, 1, 1}, {4096, 2, 2}}, 64);
  EXPECT_EQ(layout.total_bytes, 4096u);
  EXPECT_EQ(layout.offsets, (std::vector<std::size_t>{0, 0, 0}));
}

TEST(ArenaPlannerTest, SizesRoundUpToTheAlignment) {
  // 1 and 300 bytes take 256 and 512 at alignment 256; an empty buffer still takes one slot.
  const ArenaLayout layout = place_buffers({{1, 0, 0}, {300, 0, 0}, {0, 0, 0}}, 256);
  EXPECT_EQ(layout.offsets, (std::vector<std::size_t>{512, 0, 768}));
  EXPECT_EQ(layout.total_bytes, 1024u);
}

TEST(ArenaPlannerTest, EqualSizesArePlacedInIndexOrder) {
  const ArenaLayout layout = place_buffers({{128, 0, 1}, {128, 1, 2}, {128, 0, 2}}, 64);
  EXPECT_EQ(layout.offsets, (std::vector<std::size_t>{0, 128, 256}));
}

TEST(ArenaPlannerTest, RandomLifetimesKeepThePlacementInvariant) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 50; ++round) {
    std::uniform_int_distribution<int> count(1, 40), step(0, 30), span(0, 6);
    std::uniform_int_distribution<std::size_t> bytes(0, 5000);
    std::vector<BufferLifetime> buffers(static_cast<std::size_t>(count(rng)));
    for (BufferLifetime& b : buffers) {
      b.first = step(rng);
      b.last = b.first + span(rng);
      b.bytes = bytes(rng);
    }
    const std::size_t alignment = round % 2 == 0 ? 64 : 256;
    SCOPED_TRACE(testing::Message() << "round " << round);
    const ArenaLayout layout = place_buffers(buffers, alignment);
    expect_valid(buffers, layout, alignment);
    // Never worse than giving every buffer its own range.
    std::size_t separate = 0;
    for (const BufferLifetime& b : buffers)
      separate += (std::max<std::size_t>(b.bytes, 1) + alignment - 1) / alignment * alignment;
    EXPECT_LE(layout.total_bytes, separate);
  }
}

TEST(ArenaPlannerTest, EmptyLayout) { EXPECT_EQ(place_buffers({}, 64).total_bytes, 0u); }

}  // namespace
}  // namespace kiln
