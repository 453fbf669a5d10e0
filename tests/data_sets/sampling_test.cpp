// stride_sample and split_every: the seed study's 2000 images, 500 to calibrate and 1500 held out.
#include "data/sampling.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "core/error.h"

namespace kiln {
namespace {

TEST(Sampling, SeedStudyCounts) {
  const auto sample = stride_sample(50000, 2000);
  ASSERT_EQ(sample.size(), 2000u);
  EXPECT_EQ(sample[0], 0u);
  EXPECT_EQ(sample[1], 25u);
  EXPECT_EQ(sample[1999], 49975u);
  const auto split = split_every(sample, 4);
  EXPECT_EQ(split.calibration.size(), 500u);
  EXPECT_EQ(split.held_out.size(), 1500u);
  EXPECT_EQ(split.calibration[0], 0u);
  EXPECT_EQ(split.calibration[1], 100u);
  EXPECT_EQ(split.held_out[0], 25u);
}

TEST(Sampling, StrideIsFloorOfIndexTimesTotalOverCount) {
  for (const auto& [total, count] : std::vector<std::pair<std::size_t, std::size_t>>{
           {2000, 2000}, {7, 3}, {1000, 7}, {50000, 1999}, {1, 1}, {10, 10}}) {
    const auto sample = stride_sample(total, count);
    ASSERT_EQ(sample.size(), count);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(sample[i], i * total / count) << total << " " << count;
    EXPECT_EQ(std::set<std::size_t>(sample.begin(), sample.end()).size(), count);
    EXPECT_LT(sample.back(), total);
  }
}

TEST(Sampling, SplitOfWholeDatasetAndUnevenCounts) {
  std::vector<std::size_t> all(2000);
  std::iota(all.begin(), all.end(), std::size_t{0});
  const auto split = split_every(all, 4);
  EXPECT_EQ(split.calibration.size(), 500u);
  EXPECT_EQ(split.held_out.size(), 1500u);
  const std::vector<std::size_t> seven{0, 1, 2, 3, 4, 5, 6};
  const auto uneven = split_every(seven, 3);
  EXPECT_EQ(uneven.calibration, (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(uneven.held_out, (std::vector<std::size_t>{1, 2, 4, 5}));
  EXPECT_EQ(split_every(seven, 1).held_out.size(), 0u);
}

TEST(Sampling, Errors) {
  EXPECT_THROW(stride_sample(10, 11), Error);
  EXPECT_THROW(stride_sample(10, 0), Error);
  EXPECT_THROW(split_every(std::vector<std::size_t>{1}, 0), Error);
}

}  // namespace
}  // namespace kiln
