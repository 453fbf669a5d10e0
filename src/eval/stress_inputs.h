// Stress inputs: preprocessed-space images ([3, S, S] f32, already normalized with the model's mean and
// std) that real photos rarely produce, to find where an engine's outputs go NaN or infinite. With
// range_min[c] = (0 - mean[c]) / std[c] and range_max[c] = (1 - mean[c]) / std[c], the extremes of what
// the eval transform can produce, the set is, in this order:
//
//   zeros          every value 0: the dataset's mean colour
//   black          every pixel (0, 0, 0): range_min in every channel, the low extreme
//   white          every pixel (1, 1, 1): range_max in every channel, the high extreme
//   grey           every pixel (0.5, 0.5, 0.5)
//   red, green, blue   pure primaries: one channel at range_max, the others at range_min
//   saturated      each pixel's channels independently at range_min or range_max (seeded): saturated
//                  colours changing from pixel to pixel
//   checkerboard_1, checkerboard_4, checkerboard_16
//                  black and white squares of side 1, 4 and 16 pixels
//   noise_10       uniform noise in [-10, 10] normalized units (seeded), some 4x beyond the range
//   noise_1000     uniform noise in [-1000, 1000] normalized units (seeded): large amplitudes that
//                  overflow narrow formats
//
// The random values come from std::mt19937 with fixed seeds and an explicit mapping to floats, so every
// platform gets the same inputs.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/timm_config.h"

namespace kiln {

struct StressInput {
  std::string name;         // e.g. "checkerboard_4"
  std::string description;  // one line for reports
  Tensor input;             // [3, S, S] f32, S = preprocess.input_size
};

std::vector<StressInput> make_stress_inputs(const PreprocessConfig& preprocess);

}  // namespace kiln
