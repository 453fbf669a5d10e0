#include "graph/multiply_adds.h"

namespace kiln {

std::int64_t multiply_adds_per_image(const Graph& graph) {
  std::int64_t total = 0;
  for (const Node& node : graph.nodes()) {
    if (node.dead || (node.op != OpKind::kConv2d && node.op != OpKind::kLinear) || node.inputs.size() < 2)
      continue;
    const Shape& weight = graph.value(node.inputs[1]).shape;
    const Shape& output = graph.value(node.output).shape;
    if (weight.empty() || weight[0] <= 0 || output.empty()) continue;
    std::int64_t per_output = 1;  // the weights of one output channel
    for (std::size_t i = 1; i < weight.size(); ++i) per_output *= weight[i];
    std::int64_t outputs = 1;  // output elements of one image (dimension 0 is the batch)
    for (std::size_t i = 1; i < output.size(); ++i) outputs *= output[i];
    total += outputs * per_output;
  }
  return total;
}

}  // namespace kiln
