// Which nodes the backend computes inside another node's step:
//  - a convolution whose only reader is a residual add runs as one primitive with the add as a sum
//    post-op (dst = act(conv(x) + bias + other)), at the add's place in the order;
//  - a radix_sum whose only reader is a global average pool runs with it as one pass over the input.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln::onednn {

struct Fusions {
  std::vector<NodeId> conv_into_add;        // per node: for an add, the convolution fused into it
  std::vector<NodeId> radix_sum_into_pool;  // per node: for a global pool, the radix_sum fused into it
  std::vector<bool> absorbed;               // per node: computed in another node's step

  // The add input the fused convolution produces, and the other one (accumulated into).
  static ValueId conv_operand(const Graph& graph, const Node& add, NodeId conv);
  static ValueId other_operand(const Graph& graph, const Node& add, NodeId conv);
};

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order);

}  // namespace kiln::onednn
