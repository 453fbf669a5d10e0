// YOLOv10's NMS-free selection: from the decoded one-to-one predictions [N, 4 + classes, anchors], the
// `max_det` anchors with the highest best-class score, then the `max_det` highest (anchor, class) scores
// among those anchors; boxes converted to corners. The algorithm is the detect_select operator's reference
// kernel (reference/detect_select.h), so host and graph selections cannot drift apart.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/detect_select.h"
#include "core/tensor.h"

namespace kiln {

using Detection = reference::SelectedDetection;

// Per image, `max_det` detections in descending score order (ties: the lower anchor, then class, first;
// a NaN score ranks below every number, as core/ranking.h ranks).
std::vector<std::vector<Detection>> select_detections(const Tensor& decoded, std::int64_t max_det);

// The same detections read from a detect_select node's output [N, max_det, 6] (x1, y1, x2, y2, score,
// label as a float per row), for an engine whose graph ends in the selection.
std::vector<std::vector<Detection>> detections_from_rows(const Tensor& selected);

}  // namespace kiln
