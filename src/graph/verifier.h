#pragma once

#include "graph/graph.h"

namespace kiln {

// Checks the graph's invariants: ids in range, each node's attributes match its kind, its inputs
// are of the count and kinds it needs (weights constant), stored shapes agree with inference,
// no cycle, every output produced. Fails with the first problem, naming the layer.
void verify(const Graph& graph);

}  // namespace kiln
