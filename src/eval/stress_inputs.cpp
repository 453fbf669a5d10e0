#include "eval/stress_inputs.h"

#include <array>
#include <cstdint>
#include <random>

#include "core/error.h"

namespace kiln {

namespace {

using Colour = std::array<float, 3>;  // a pixel in [0, 1] before normalization

// A uniform float in [0, 1) from the top 24 bits of one generator draw: the same on every platform,
// unlike std::uniform_real_distribution.
float unit_uniform(std::mt19937& generator) {
  return static_cast<float>(generator() >> 8) * (1.0f / 16777216.0f);
}

class Maker {
 public:
  explicit Maker(const PreprocessConfig& preprocess) : preprocess_(preprocess), size_(preprocess.input_size) {
    require(size_ > 0, "stress inputs need a positive input size, got ", size_);
  }

  float normalize(float pixel, std::size_t channel) const {
    return (pixel - preprocess_.mean[channel]) / preprocess_.std[channel];
  }

  // value(c, y, x) gives the normalized value of each element.
  template <typename F>
  StressInput make(std::string name, std::string description, F&& value) const {
    Tensor input(DType::kF32, {3, size_, size_});
    float* out = input.mutable_f32().data();
    for (std::int64_t c = 0; c < 3; ++c) {
      for (std::int64_t y = 0; y < size_; ++y) {
        for (std::int64_t x = 0; x < size_; ++x) *out++ = value(static_cast<std::size_t>(c), y, x);
      }
    }
    return {std::move(name), std::move(description), std::move(input)};
  }

  StressInput colour(std::string name, std::string description, const Colour& pixel) const {
    return make(std::move(name), std::move(description),
                [&](std::size_t c, std::int64_t, std::int64_t) { return normalize(pixel[c], c); });
  }

  StressInput checkerboard(std::int64_t period) const {
    return make(cat("checkerboard_", period), cat("black and white squares of side ", period, " pixels"),
                [&](std::size_t c, std::int64_t y, std::int64_t x) {
                  return normalize(((y / period + x / period) % 2 == 0) ? 0.0f : 1.0f, c);
                });
  }

  // Values drawn in the order c, y, x from one seeded generator.
  template <typename Draw>
  StressInput random(std::string name, std::string description, std::uint32_t seed, Draw&& draw) const {
    std::mt19937 generator(seed);
    return make(std::move(name), std::move(description),
                [&](std::size_t c, std::int64_t, std::int64_t) { return draw(generator, c); });
  }

 private:
  const PreprocessConfig& preprocess_;
  std::int64_t size_;
};

}  // namespace

std::vector<StressInput> make_stress_inputs(const PreprocessConfig& preprocess) {
  const Maker maker(preprocess);
  std::vector<StressInput> inputs;
  inputs.push_back(maker.make("zeros", "every value 0 (the mean colour)",
                              [](std::size_t, std::int64_t, std::int64_t) { return 0.0f; }));
  inputs.push_back(
      maker.colour("black", "pixels (0, 0, 0): the low extreme of the preprocessing range", {0, 0, 0}));
  inputs.push_back(
      maker.colour("white", "pixels (1, 1, 1): the high extreme of the preprocessing range", {1, 1, 1}));
  inputs.push_back(maker.colour("grey", "pixels (0.5, 0.5, 0.5)", {0.5f, 0.5f, 0.5f}));
  inputs.push_back(maker.colour("red", "pure red (1, 0, 0)", {1, 0, 0}));
  inputs.push_back(maker.colour("green", "pure green (0, 1, 0)", {0, 1, 0}));
  inputs.push_back(maker.colour("blue", "pure blue (0, 0, 1)", {0, 0, 1}));
  inputs.push_back(maker.random("saturated", "each channel of each pixel at 0 or 1 at random", 1,
                                [&](std::mt19937& generator, std::size_t c) {
                                  return maker.normalize((generator() >> 31) != 0 ? 1.0f : 0.0f, c);
                                }));
  for (const std::int64_t period : {1, 4, 16}) inputs.push_back(maker.checkerboard(period));
  inputs.push_back(maker.random(
      "noise_10", "uniform noise in [-10, 10] normalized units", 2,
      [](std::mt19937& generator, std::size_t) { return 20.0f * unit_uniform(generator) - 10.0f; }));
  inputs.push_back(maker.random(
      "noise_1000", "uniform noise in [-1000, 1000] normalized units", 3,
      [](std::mt19937& generator, std::size_t) { return 2000.0f * unit_uniform(generator) - 1000.0f; }));
  return inputs;
}

}  // namespace kiln
