// A convolution or linear layer as the ways of running it see it: what the program building it knows of
// the layer (its geometry, precision, weights and epilogue) and the device buffers it reads and writes.
#pragma once

#include <string>

#include "backends/cuda/convolution/conv_geometry.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln::cuda {

struct ConvLayer {
  const Node* node = nullptr;
  NodeId reported = kNoNode;  // the layer its step and tactic are reported under
  std::string name;           // that layer's name
  bool linear = false, fp8 = false;
  bool int8 = false;  // int8 operands: kiln's Hopper kernel only (conv_candidates.cpp)
  ConvGeometry geometry;
  ConvBuffers buffers;
  Tensor weights;  // f32 on the host, KRSC (convolutions) or [O, I] (linear layers)
  Tensor bias;     // f32 on the host, [k]: the graph's, or zeros where it has none
  Activation activation = Activation::kNone;
  bool residual = false;
  NodeId producer = kNoNode;  // the node whose output it writes (itself, or the add it computes)
  bool codes = false;         // its epilogue writes the E4M3 codes of a quantize point (quantize_fusion.h)
};

// The layer's activation as kiln's kernels and the libraries' layer objects take it.
inline Act act_of(Activation a) {
  switch (a) {
    case Activation::kNone:
      return Act::kNone;
    case Activation::kRelu:
      return Act::kRelu;
    case Activation::kSilu:
      return Act::kSilu;
    case Activation::kSigmoid:
      return Act::kSigmoid;
  }
  return Act::kNone;
}

}  // namespace kiln::cuda
