// The condition every backend's fusions start from: a node may compute its producer inside its
// own step when nobody else sees the intermediate value (passes::sole_reader).
#pragma once

#include "graph/graph.h"
#include "passes/rewrite_util.h"

namespace kiln::backends {

// The live node producing `value` with operator `op`, when `reader` is the value's only reader and the
// value is no graph output; kNoNode otherwise.
NodeId fusable_producer(const Graph& graph, const passes::Consumers& consumers, ValueId value, NodeId reader,
                        OpKind op);

}  // namespace kiln::backends
