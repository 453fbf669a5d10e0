// Seeded random tensors for tests and benchmarks: the same data on every run.
#pragma once

#include <cstdint>
#include <random>
#include <utility>

#include "core/tensor.h"

namespace kiln::testing {

// Uniform values in [low, high) from a fixed seed, so every run sees the same data.
inline Tensor random_tensor(Shape shape, std::uint32_t seed, float low = -1.0f, float high = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  for (float& v : t.mutable_f32()) v = dist(rng);
  return t;
}

}  // namespace kiln::testing
