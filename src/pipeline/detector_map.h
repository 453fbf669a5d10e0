// A detector's mAP against YOLO labels (data/yolo_labels.h): each evaluated image's label file gives
// its ground truth, scaled from fractions to the image's pixels, and the engine's detections scoring at
// least `min_score` (in the same pixels, already mapped back from the letterbox) are ranked against it
// (eval/detection_map.h).
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "data/dataset.h"
#include "data/yolo_labels.h"
#include "eval/detection_map.h"
#include "io/image.h"
#include "pipeline/detector_engine.h"

namespace kiln::pipeline {

// COCO's evaluation keeps every detection scoring above 0.001 or so: the ranking's tail still adds recall.
inline constexpr double kMapMinScore = 0.001;

class DetectorMapAccumulator {
 public:
  // Reads the label files of dataset images `indices` (an image without one holds no objects) before
  // any image runs, so that a bad line stops the evaluation at once.
  DetectorMapAccumulator(const Dataset& dataset, std::span<const std::size_t> indices,
                         std::size_t num_classes, double min_score);
  // Dataset image `index` (one of `indices`), decoded, and the engine's detections of it.
  void add(std::size_t index, const Image& image, const std::vector<Detection>& detections);
  MapResult result() const { return map_.result(); }

 private:
  double min_score_;
  std::map<std::size_t, std::vector<YoloBox>> labels_;  // by dataset index
  DetectionMap map_;
};

}  // namespace kiln::pipeline
