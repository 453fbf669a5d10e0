#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln {

// The output shape of `node` given its input shapes; fails naming the layer when they do not fit.
// A -1 batch stays -1.
Shape infer_node_shape(const Node& node, const std::vector<Shape>& input_shapes);

// Shapes of every value for concrete graph-input shapes (indexed by ValueId).
std::vector<Shape> infer_shapes(const Graph& graph, const std::vector<Shape>& input_shapes);

}  // namespace kiln
