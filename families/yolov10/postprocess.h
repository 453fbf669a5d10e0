// YOLOv10's NMS-free selection: from the decoded one-to-one predictions [N, 4 + classes, anchors], the
// `max_det` anchors with the highest best-class score, then the `max_det` highest (anchor, class) scores
// among those anchors; boxes converted to corners.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace kiln {

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners in input pixels
  float score = 0;
  std::int64_t label = 0;
};

// Per image, `max_det` detections in descending score order (ties: the lower anchor, then class, first;
// a NaN score ranks below every number, as eval/top_k.h ranks).
std::vector<std::vector<Detection>> select_detections(const Tensor& decoded, std::int64_t max_det);

}  // namespace kiln
