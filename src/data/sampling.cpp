#include "data/sampling.h"

#include <cstdint>

#include "core/error.h"

namespace kiln {

std::vector<std::size_t> stride_sample(std::size_t total, std::size_t count) {
  require(count > 0, "sample: asked for 0 images (expected at least 1)");
  require(count <= total, "sample: asked for ", count, " images of a dataset of ", total);
  require(count <= UINT32_MAX, "sample: ", count, " images is more than this sampler supports");
  // i * total / count computed as i * q + i * r / count, so the product cannot overflow
  // (i * r < count * count fits 64 bits for count below 2^32).
  const std::size_t quotient = total / count;
  const std::size_t remainder = total % count;
  std::vector<std::size_t> indices(count);
  for (std::size_t i = 0; i < count; ++i) indices[i] = i * quotient + i * remainder / count;
  return indices;
}

CalibrationSplit split_every(std::span<const std::size_t> indices, std::size_t every) {
  require(every > 0, "split: every must be at least 1, got 0");
  CalibrationSplit split;
  split.calibration.reserve(indices.size() / every + 1);
  split.held_out.reserve(indices.size() - indices.size() / every);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    (i % every == 0 ? split.calibration : split.held_out).push_back(indices[i]);
  }
  return split;
}

}  // namespace kiln
