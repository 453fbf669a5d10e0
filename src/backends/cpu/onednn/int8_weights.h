// The weight codes and per-channel scales of a graph's int8 convolutions, taken from their dequantize
// points before the backend folds those into f32 constants: oneDNN's int8 convolutions read the codes
// themselves and apply the scales in their epilogue.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln::onednn {

struct Int8Weights {
  Tensor codes;               // S8, [O, I / groups, kh, kw]
  std::vector<float> scales;  // one per output channel
};

// By layer name; every live int8 convolution whose weight is a dequantize of constants.
std::map<std::string, Int8Weights> int8_conv_weights(const Graph& graph);

}  // namespace kiln::onednn
