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
  std::vector<std::string> labels;  // per row: the file, "file[i]" for .npy rows
  // Per row: a photo's letterbox geometry (no pixels: letterboxing waits until the backend is known, so
  // that cuda can do it on the device), whose boxes map back to its pixels; none for a .npy row, whose
  // boxes stay in input pixels.
  std::vector<std::optional<Letterbox>> letterboxes;
  std::vector<Image> pictures;  // per row: the photo, or the .npy row as an 8-bit image, to draw on
  // Per row: a .npy row as read ([3, size, size]); none for a photo.
  std::vector<std::optional<Tensor>> letterboxed_rows;

  std::int64_t rows() const { return static_cast<std::int64_t>(labels.size()); }
  bool all_photos() const;
};

DetectorInputs load_detector_inputs(const std::vector<std::filesystem::path>& files,
                                    const DetectorInfo& detector, std::int64_t size);

// The batch the detector reads, [N, 3, size, size]: photos letterboxed on the host, .npy rows as read.
Tensor letterbox_on_host(const DetectorInputs& inputs, const DetectorInfo& detector, std::int64_t size);
// The same for photos alone.
Tensor letterbox_on_host(const std::vector<Image>& photos, const DetectorInfo& detector, std::int64_t size);

}  // namespace kiln::pipeline
