// One pass of a detector (and, when given, a reference detector on the same images) over dataset
// images in batches of the engine's size, a last partial batch padded: what box parity and mAP share.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "pipeline/detector_engine.h"

namespace kiln::pipeline {

struct DetectedImage {
  std::size_t index = 0;  // in the dataset
  const Image* image = nullptr;
  const std::vector<Detection>* detections = nullptr;  // the engine's, best first, in image pixels
  const std::vector<Detection>* reference = nullptr;   // the reference's; null without one
  const Tensor* decoded = nullptr;  // the engine's raw output for the whole batch; this image is row `row`
  std::size_t row = 0;
};

// Calls `visit` once per decoded image, in `indices` order; returns the number of unreadable images
// skipped (with `strict`, the first one's error is thrown). `label` names the progress line.
std::size_t for_each_detection(DetectorEngine& engine, DetectorEngine* reference, const Dataset& dataset,
                               std::span<const std::size_t> indices, bool strict, const std::string& label,
                               const std::function<void(const DetectedImage&)>& visit);

}  // namespace kiln::pipeline
