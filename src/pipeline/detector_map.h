// A detector's mAP against YOLO labels (data/yolo_labels.h): each evaluated image's label file gives
// its ground truth, scaled from fractions to the image's pixels, and the engine's detections scoring at
// least `min_score` (in the same pixels, already mapped back from the letterbox) are ranked against it
// (eval/detection_map.h).
#pragma once

#include <cstddef>
#include <vector>

#include "data/dataset.h"
#include "eval/detection_map.h"
#include "io/image.h"
#include "pipeline/detector_engine.h"

namespace kiln::pipeline {

// COCO's evaluation keeps every detection scoring above 0.001 or so: the ranking's tail still adds recall.
inline constexpr double kMapMinScore = 0.001;

class DetectorMapAccumulator {
 public:
  DetectorMapAccumulator(std::size_t num_classes, double min_score);
  // Reads the sample's label file (an image without one holds no objects).
  void add(const Sample& sample, const Image& image, const std::vector<Detection>& detections);
  MapResult result() const { return map_.result(); }

 private:
  std::size_t num_classes_;
  double min_score_;
  DetectionMap map_;
};

}  // namespace kiln::pipeline
