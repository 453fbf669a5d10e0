// Shared helpers for the reference kernel tests: seeded random tensors and a relative-error check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "testing/random_tensor.h"

namespace kiln::testing {

inline double relative_error(const Tensor& y, const std::vector<double>& ref) {
  const auto ys = y.f32();
  EXPECT_EQ(ys.size(), ref.size());
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ys.size() && i < ref.size(); ++i) {
    diff += (ys[i] - ref[i]) * (ys[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Both sides accumulate in double and round once to fp32 (the test's reference is compared before
// that rounding), so each element differs by at most half an fp32 ulp, a relative 2^-24 ~ 6e-8; the
// 1e-6 bound leaves room for the different summation orders while catching any indexing mistake,
// which shows up as an O(1) error.
inline constexpr double kRelTolerance = 1e-6;

inline std::vector<float> values(const Tensor& t) {
  const auto s = t.f32();
  return {s.begin(), s.end()};
}

// How often `what` occurs in `text` (overlaps counted), e.g. a kind of step in a compiled model's describe().
inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// How many lines of `text` hold both `first` and `second`, e.g. convolutions of one kernel with a residual.
inline std::size_t count_lines_with(const std::string& text, const std::string& first,
                                    const std::string& second) {
  std::size_t count = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    const std::string line = text.substr(begin, end - begin);
    count += line.find(first) != std::string::npos && line.find(second) != std::string::npos;
    begin = end + 1;
  }
  return count;
}

// x with every element moved by up to fp16's unit roundoff (2^-11), at random: how far a network's
// reference output moves under it bounds what fp16 storage may move a GPU's.
inline Tensor jittered(const Tensor& x, std::uint32_t seed) {
  const Tensor noise = random_tensor(x.shape(), seed);
  Tensor y(DType::kF32, x.shape());
  for (std::size_t i = 0; i < y.mutable_f32().size(); ++i)
    y.mutable_f32()[i] = x.f32()[i] * (1.0f + noise.f32()[i] * 4.9e-4f);
  return y;
}

}  // namespace kiln::testing
