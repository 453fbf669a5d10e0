// YOLOv10 detection models (the yolov10{n,s,m,b,l,x}.yaml networks of the YOLOv10 authors' code) from a
// checkpoint with "model.model.<layer>..." keys. The layer graph (which layer feeds which, where the
// upsampling and concatenations are, which convolutions stride) is the one all six yaml files share;
// what each layer is (Conv, C2f, C2fCIB with or without the large-kernel RepVGG pair, SCDown, SPPF, PSA)
// and every width and depth come from the checkpoint's keys and shapes. Only the one-to-one head runs:
// the graph's output is its decoded prediction [N, 4 + classes, anchors] (boxes as centre x, y, width,
// height in input pixels, then class scores after the sigmoid); the one-to-many head's tensors are
// skipped and listed as unused.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "families/yolov10/config.h"
#include "graph/graph.h"

namespace kiln {

struct Yolov10Build {
  Graph graph;
  std::int64_t num_classes = 0;
  std::vector<std::string> unused_keys;  // the one-to-many head, which inference does not run
};

// Builds for a batch of `batch` (-1: any) images of config.imgsz pixels a side.
Yolov10Build build_yolov10(const std::map<std::string, Tensor>& weights, const YoloConfig& config,
                           std::int64_t batch);

}  // namespace kiln
