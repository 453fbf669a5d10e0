// Small helpers the passes share for matching and rewriting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::passes {

using Consumers = std::vector<std::vector<NodeId>>;  // Graph::consumers(): live readers per value

bool is_graph_output(const Graph& graph, ValueId value);

// The live node reading `value` if it is the only reader and `value` is not a graph output: the
// condition for rewriting a producer together with its consumer without anyone else seeing the
// intermediate value disappear.
std::optional<NodeId> sole_reader(const Graph& graph, const Consumers& consumers, ValueId value);

// Marks `node` dead and makes everything that read its output (nodes and graph outputs) read
// `replacement` instead.
void bypass(Graph& graph, NodeId node, ValueId replacement);

// `base` if no value has that name yet, else `base.2`, `base.3`, ... so new constants stay unique and
// their names do not depend on anything but the graph.
std::string fresh_value_name(const Graph& graph, const std::string& base);

}  // namespace kiln::passes
