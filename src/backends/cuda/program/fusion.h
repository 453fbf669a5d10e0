// Which nodes the CUDA backend computes inside another node's step:
//  - a convolution without activation whose only reader is an add runs with the add as its residual
//    epilogue, at the add's place;
//  - a radix_sum whose only reader is a global average pool is pooled on the fly;
//  - a radix_softmax whose only reader is a radix_weighted_sum is computed inline by it;
//  - an attention or squeeze-excite gate's two 1x1 convolutions on a pooled vector run as one launch; for
//    a single image (squeeze_mlp_kernels.h) it also computes the global pool (and the radix sum pooled on the
//    fly) where the pool's only reader is the gate and the pool is small enough to run fast in it;
//  - a squeeze-excite (global pool -> fc1 -> fc2 -> channel scale) runs in two launches at any batch:
//    fc1's step computes the pool before it, the channel scale's step computes fc2 (and its sigmoid) for
//    the channels it scales, so neither the pooled vector nor the gate is a step of its own;
//  - a dequantize point's codes and scales are read by its FP8 convolutions at compile time;
//  - a quantize point's E4M3 codes are written by its input's producer (quantize_fusion.h);
//  - a cascade of two or three equal stride-1 "same" max pools (SPPF's) on images of at most
//    kPoolCascadeMaxPixels pixels runs as one launch at the first pool's place, each output still
//    written: a 5x5 pool of a 5x5 pool is the 9x9 pool of the input;
//  - a two-part channel concat (YOLOv10's box bins and class logits) whose only reader is a detection
//    decode is read apart by the decode, each part where its producer wrote it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace kiln::cuda {

struct Fusions {
  std::vector<NodeId> conv_into_add;        // per add: the convolution computed with it
  std::vector<NodeId> radix_sum_into_pool;  // per global pool: the radix_sum it pools on the fly
  std::vector<NodeId> softmax_into_sum;     // per radix_weighted_sum: the radix_softmax it computes inline
  std::vector<NodeId>
      squeeze_into_expand;  // per attention gate's second 1x1 conv: the first (squeeze_mlp_kernels.h)
  std::vector<NodeId> pool_into_gate;     // per attention gate's second 1x1 conv: the pool it computes
  std::vector<NodeId> pool_into_squeeze;  // per squeeze-excite fc1: the global pool it computes
  std::vector<NodeId> excite_into_scale;  // per channel scale: the squeeze-excite fc2 it computes
  std::vector<bool> absorbed;
  // quantize_fusion.h
  std::vector<NodeId> quantize_into_producer;  // per producer: the first quantize point whose codes it writes
  std::vector<NodeId> codes_writer;            // per quantize point: the producer writing its codes
  std::vector<bool> keeps_value;               // per node: whether its step still writes its own output
  // per max pool: the next pools of the cascade it computes (kNoNode where none); their outputs keep
  // buffers of their own (Schedule::written_inside)
  std::vector<std::array<NodeId, 2>> pools_into_pool;
  std::vector<NodeId> concat_into_decode;  // per detection decode: the concat it reads apart

  // The nodes computed in `node`'s step besides quantize points (kNoNode where none); a gate's step also
  // computes the radix sum its pool pools.
  std::array<NodeId, 11> inner(NodeId node) const;
};

// fuse_quantize false keeps every quantize point in a step of its own; `batch` is the batch the program
// runs (the gate's kernel and whether it takes the pool depend on it).
Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order, bool fuse_quantize = true,
                     std::int64_t batch = 1);

}  // namespace kiln::cuda
