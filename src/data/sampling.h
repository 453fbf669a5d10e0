// Choosing images deterministically: a fixed-stride sample of a dataset, and its split into a
// calibration part and a held-out part. The seed study takes 2000 of ImageNet's 50000 validation
// images and calibrates on every 4th of those (500), evaluating on the other 1500.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace kiln {

// Indices floor(i * total / count) for i in [0, count): spread evenly from index 0, each distinct.
// Fails when count is 0 or larger than total.
std::vector<std::size_t> stride_sample(std::size_t total, std::size_t count);

struct CalibrationSplit {
  std::vector<std::size_t> calibration;  // indices[i] with i % every == 0
  std::vector<std::size_t> held_out;     // the others
};

// Splits by position in `indices`: positions 0, every, 2 * every, ... calibrate. Fails when every is 0.
CalibrationSplit split_every(std::span<const std::size_t> indices, std::size_t every);

}  // namespace kiln
