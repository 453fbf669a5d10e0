// Which nodes the CUDA backend computes inside another node's step:
//  - a convolution without activation whose only reader is an add runs with the add as its residual
//    epilogue, at the add's place;
//  - a radix_sum whose only reader is a global average pool is pooled on the fly;
//  - a radix_softmax whose only reader is a radix_weighted_sum is computed inline by it;
//  - an attention or squeeze-excite gate's two 1x1 convolutions on a pooled vector run as one squeeze_mlp
//    launch;
//  - a dequantize point's codes and scales are read by its FP8 convolutions at compile time.
#pragma once

#include <array>
#include <vector>

#include "graph/graph.h"

namespace kiln::cuda {

struct Fusions {
  std::vector<NodeId> conv_into_add;        // per add: the convolution computed with it
  std::vector<NodeId> radix_sum_into_pool;  // per global pool: the radix_sum it pools on the fly
  std::vector<NodeId> softmax_into_sum;     // per radix_weighted_sum: the radix_softmax it computes inline
  std::vector<NodeId> squeeze_into_expand;  // per attention gate's second 1x1 conv: the first (squeeze_mlp.h)
  std::vector<bool> absorbed;

  // The nodes computed in `node`'s step (kNoNode where none).
  std::array<NodeId, 4> inner(NodeId node) const;
};

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order);

}  // namespace kiln::cuda
