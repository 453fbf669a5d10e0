// Which nodes the backend computes inside another node's step:
//  - a convolution whose only reader is a residual add runs as one primitive with the add as a sum
//    post-op (dst = act(conv(x) + bias + other)), at the add's place in the order;
//  - a radix_sum whose only reader is a global average pool runs with it as one pass over the input;
//  - an int8 plan's residual stream held in int8 codes (quant/fp8_rewrite.h, quantize_residuals()): an
//    add fused into an int8 convolution whose other operand is an int8 quantize point's output is a
//    "codes sum": the convolution accumulates the other operand's codes (stored as codes where every
//    reader of the point takes codes: int8 convolutions, and codes sums reading them as their other
//    operand), and where the add's only reader is an int8 quantize point whose readers take codes, it
//    writes that point's codes (int8_conv_steps.cpp).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln::onednn {

struct Fusions {
  std::vector<NodeId> conv_into_add;        // per node: for an add, the convolution fused into it
  std::vector<NodeId> radix_sum_into_pool;  // per node: for a global pool, the radix_sum fused into it
  std::vector<bool> absorbed;               // per node: computed in another node's step
  std::vector<bool> codes_sum;              // per node: for an add, whether it is a codes sum (above)

  // The add input the fused convolution produces, and the other one (accumulated into).
  static ValueId conv_operand(const Graph& graph, const Node& add, NodeId conv);
  static ValueId other_operand(const Graph& graph, const Node& add, NodeId conv);
};

Fusions find_fusions(const Graph& graph, const std::vector<NodeId>& order);

// The node of the per-tensor int8 quantize point producing `value`, or nullptr.
const Node* int8_quantize_producing(const Graph& graph, ValueId value);

// Whether `reader` takes `value` as int8 codes: an int8 convolution reading it as its input, or a codes
// sum reading it as its other operand.
bool takes_int8_codes(const Graph& graph, const Fusions& fusions, NodeId reader, ValueId value);

}  // namespace kiln::onednn
