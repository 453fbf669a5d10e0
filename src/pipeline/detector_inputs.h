// A detector's inputs from files: photos letterboxed the detector's way, or .npy batches already
// letterboxed ([N, 3, S, S] or [3, S, S] float32, RGB / 255 in [0, 1], the detector's input tensor).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "families/registry.h"
#include "io/image.h"

namespace kiln::pipeline {

struct DetectorInputs {
  Tensor tensor;                    // [N, 3, size, size]
  std::vector<std::string> labels;  // per row: the file, "file[i]" for .npy rows
  // Per row: the letterbox of a photo, whose boxes map back to its pixels; none for a .npy row, whose
  // boxes stay in input pixels.
  std::vector<std::optional<Letterbox>> letterboxes;
  std::vector<Image> pictures;  // per row: the photo, or the .npy row as an 8-bit image, to draw on
};

DetectorInputs load_detector_inputs(const std::vector<std::filesystem::path>& files,
                                    const DetectorInfo& detector, std::int64_t size);

}  // namespace kiln::pipeline
