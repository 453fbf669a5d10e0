// Loading calibration images for an FP8 build: a fixed-stride sample of a dataset, split so that every
// k-th sampled image calibrates and the others stay held out for evaluation (the seed study: 2000
// sampled, every 4th = 500 calibrate, 1500 held out).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "io/image.h"
#include "io/timm_config.h"
#include "quant/fp8_build.h"

namespace kiln {

struct CalibrationImageOptions {
  std::string data;          // anything open_dataset() takes
  std::size_t images = 500;  // calibration images wanted (fewer when the dataset is smaller)
  std::size_t every = 4;     // 1: calibrate on the whole sample
  bool strict = false;       // a bad image is fatal instead of skipped
};

// How a decoded image becomes the network's [3, H, W] input: timm's eval transform for classifiers, a
// letterbox for detectors.
using ImageToInput = std::function<Tensor(const Image&)>;

CalibrationImages load_calibration_images(const CalibrationImageOptions& options,
                                          const PreprocessConfig& preprocess);
CalibrationImages load_calibration_images(const CalibrationImageOptions& options,
                                          const ImageToInput& to_input);

// What a build calibrated on, from a CalibrationImages::source record: "calibrated on 125 of 500 images
// in val/ (every 4th of a 500-image sample; the other 375 held out for kiln eval)", so that a sample
// smaller than the folder is never a surprise.
std::string calibration_note(const nlohmann::json& source);

// The dataset indices load_calibration_images(options, ...) calibrates on.
std::vector<std::size_t> calibration_indices(const Dataset& dataset, const CalibrationImageOptions& options);

// What a calibration cache records of its images: the sha256 of their names and sizes, one
// "NAME\tBYTES\n" line per image in order, so other data (or another sample of it) is told apart
// without decoding anything.
std::string calibration_fingerprint(const Dataset& dataset, std::span<const std::size_t> indices);
// The same from an open dataset and chosen indices (a study's calibration split).
CalibrationImages load_calibration_images(const Dataset& dataset, std::span<const std::size_t> indices,
                                          const PreprocessConfig& preprocess, bool strict);
CalibrationImages load_calibration_images(const Dataset& dataset, std::span<const std::size_t> indices,
                                          const ImageToInput& to_input, bool strict);

}  // namespace kiln
