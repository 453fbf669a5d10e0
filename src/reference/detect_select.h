// YOLOv10's NMS-free selection, the one implementation of it: the reference kernel of kDetectSelect
// (kernels.h) and the detector's host post-processing (families/yolov10/postprocess.h) both call it, and
// the CUDA kernel is tested to select exactly what it selects.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace kiln::reference {

struct SelectedDetection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners in input pixels
  float score = 0;
  std::int64_t label = 0;
};

// From decoded predictions [N, 4 + classes, anchors] (centre x, y, width, height, then class scores), per
// image: stage 1 keeps the max_det anchors with the highest best-class score (the running maximum over the
// classes as std::max takes it: a NaN first score stays, a later NaN is passed over); stage 2 takes the
// max_det highest scores among the kept anchors' (anchor, class) scores, flattened in kept order times
// classes. Both stages rank as core/ranking.h does (ties to the lower index, NaN below every number).
// Fewer than max_det detections only when an image has fewer than max_det anchors x classes scores.
std::vector<std::vector<SelectedDetection>> select_detections(const Tensor& decoded, std::int64_t max_det);

}  // namespace kiln::reference
