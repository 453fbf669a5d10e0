// The stress set is what stress_inputs.h says it is.
#include "eval/stress_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace kiln {
namespace {

PreprocessConfig small_config() {
  PreprocessConfig config;
  config.input_size = 32;
  return config;  // ImageNet mean and std
}

std::map<std::string, Tensor> by_name(const std::vector<StressInput>& inputs) {
  std::map<std::string, Tensor> map;
  for (const auto& input : inputs) map.emplace(input.name, input.input);
  return map;
}

float at(const Tensor& t, std::int64_t c, std::int64_t y, std::int64_t x) {
  return t.f32()[static_cast<std::size_t>((c * t.dim(1) + y) * t.dim(2) + x)];
}

TEST(StressInputs, NamesShapesAndDescriptions) {
  const auto inputs = make_stress_inputs(small_config());
  std::vector<std::string> names;
  for (const auto& input : inputs) {
    names.push_back(input.name);
    EXPECT_EQ(input.input.shape(), (Shape{3, 32, 32})) << input.name;
    EXPECT_FALSE(input.description.empty()) << input.name;
    for (const float v : input.input.f32()) ASSERT_TRUE(std::isfinite(v)) << input.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"zeros", "black", "white", "grey", "red", "green", "blue",
                                             "saturated", "checkerboard_1", "checkerboard_4",
                                             "checkerboard_16", "noise_10", "noise_1000"}));
}

TEST(StressInputs, ConstantColoursAreNormalizedWithThePlansMeanAndStd) {
  const PreprocessConfig config = small_config();
  const auto inputs = by_name(make_stress_inputs(config));
  for (std::int64_t c = 0; c < 3; ++c) {
    const auto k = static_cast<std::size_t>(c);
    const float low = (0.0f - config.mean[k]) / config.std[k];
    const float high = (1.0f - config.mean[k]) / config.std[k];
    const float mid = (0.5f - config.mean[k]) / config.std[k];
    for (const auto& [y, x] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {31, 31}, {7, 20}}) {
      EXPECT_EQ(at(inputs.at("zeros"), c, y, x), 0.0f);
      EXPECT_FLOAT_EQ(at(inputs.at("black"), c, y, x), low);
      EXPECT_FLOAT_EQ(at(inputs.at("white"), c, y, x), high);
      EXPECT_FLOAT_EQ(at(inputs.at("grey"), c, y, x), mid);
      EXPECT_FLOAT_EQ(at(inputs.at("red"), c, y, x), c == 0 ? high : low);
      EXPECT_FLOAT_EQ(at(inputs.at("green"), c, y, x), c == 1 ? high : low);
      EXPECT_FLOAT_EQ(at(inputs.at("blue"), c, y, x), c == 2 ? high : low);
    }
  }
}

TEST(StressInputs, ExtremesFollowAnotherMeanAndStd) {
  PreprocessConfig config = small_config();
  config.mean = {0.5f, 0.5f, 0.5f};
  config.std = {0.5f, 0.25f, 0.125f};
  const auto inputs = by_name(make_stress_inputs(config));
  EXPECT_FLOAT_EQ(at(inputs.at("black"), 0, 3, 3), -1.0f);
  EXPECT_FLOAT_EQ(at(inputs.at("white"), 1, 3, 3), 2.0f);
  EXPECT_FLOAT_EQ(at(inputs.at("white"), 2, 3, 3), 4.0f);
  EXPECT_FLOAT_EQ(at(inputs.at("black"), 2, 3, 3), -4.0f);
}

TEST(StressInputs, SaturatedAndCheckerboardsTakeOnlyTheExtremes) {
  const PreprocessConfig config = small_config();
  const auto inputs = by_name(make_stress_inputs(config));
  for (const char* name : {"saturated", "checkerboard_1", "checkerboard_4", "checkerboard_16"}) {
    const Tensor& t = inputs.at(name);
    std::set<float> seen;
    for (std::int64_t c = 0; c < 3; ++c) {
      const auto k = static_cast<std::size_t>(c);
      const float low = (0.0f - config.mean[k]) / config.std[k];
      const float high = (1.0f - config.mean[k]) / config.std[k];
      std::size_t lows = 0;
      std::size_t highs = 0;
      for (std::int64_t y = 0; y < 32; ++y) {
        for (std::int64_t x = 0; x < 32; ++x) {
          const float v = at(t, c, y, x);
          ASSERT_TRUE(v == low || v == high) << name << " " << v;
          (v == low ? lows : highs) += 1;
        }
      }
      EXPECT_GT(lows, 300u) << name;  // both extremes, in roughly equal numbers
      EXPECT_GT(highs, 300u) << name;
    }
  }
  const float low = (0.0f - config.mean[0]) / config.std[0];
  const float high = (1.0f - config.mean[0]) / config.std[0];
  EXPECT_EQ(at(inputs.at("checkerboard_1"), 0, 0, 0), low);
  EXPECT_EQ(at(inputs.at("checkerboard_1"), 0, 0, 1), high);
  EXPECT_EQ(at(inputs.at("checkerboard_1"), 0, 1, 1), low);
  EXPECT_EQ(at(inputs.at("checkerboard_4"), 0, 3, 3), low);
  EXPECT_EQ(at(inputs.at("checkerboard_4"), 0, 3, 4), high);
  EXPECT_EQ(at(inputs.at("checkerboard_16"), 0, 15, 15), low);
  EXPECT_EQ(at(inputs.at("checkerboard_16"), 0, 16, 15), high);
  EXPECT_EQ(at(inputs.at("checkerboard_16"), 0, 16, 16), low);
}

TEST(StressInputs, NoiseSpansItsAmplitudeAndIsTheSameEveryTime) {
  const auto first = by_name(make_stress_inputs(small_config()));
  const auto second = by_name(make_stress_inputs(small_config()));
  for (const auto& [name, amplitude] : {std::pair{"noise_10", 10.0f}, std::pair{"noise_1000", 1000.0f}}) {
    const auto values = first.at(name).f32();
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    EXPECT_GE(*low, -amplitude);
    EXPECT_LT(*high, amplitude);
    EXPECT_LT(*low, -0.95f * amplitude) << name;
    EXPECT_GT(*high, 0.95f * amplitude) << name;
    double sum = 0.0;
    for (const float v : values) sum += v;
    EXPECT_LT(std::fabs(sum / static_cast<double>(values.size())), 0.05 * amplitude) << name;
    EXPECT_TRUE(std::equal(values.begin(), values.end(), second.at(name).f32().begin())) << name;
  }
  EXPECT_FALSE(std::equal(first.at("noise_10").f32().begin(), first.at("noise_10").f32().end(),
                          first.at("saturated").f32().begin()));
}

}  // namespace
}  // namespace kiln
