// Which nodes the CUDA backend computes inside another node's step:
//  - a convolution without activation whose only reader is an add runs with the add as its residual
//    epilogue, at the add's place;
//  - a radix_sum whose only reader is a global average pool is pooled on the fly;
//  - a radix_softmax whose only reader is a radix_weighted_sum is computed inline by it;
//  - an attention or squeeze-excite gate's two 1x1 convolutions on a pooled vector run as one squeeze_mlp
//    launch;
//  - a dequantize point's codes and scales are read by its FP8 convolutions at compile time;
//  - a quantize point's E4M3 codes are written by its input's producer (quantize_fusion.h).
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
  // quantize_fusion.h
  std::vector<NodeId> quantize_into_producer;  // per producer: the first quantize point whose codes it writes
  std::vector<NodeId> codes_writer;            // per quantize point: the producer writing its codes
  std::vector<bool> keeps_value;               // per node: whether its step still writes its own output

  // The nodes computed in `node`'s step besides quantize points (kNoNode where none).
  std::array<NodeId, 4> inner(NodeId node) const;
};

// fuse_quantize false keeps every quantize point in a step of its own.
Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order, bool fuse_quantize = true);

}  // namespace kiln::cuda
