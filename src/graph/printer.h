#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln {

// One line per live node in topological order: "%12 = conv2d layer1.0.conv1(%11, w[64,64,1,1]) ..."
std::string print_graph(const Graph& graph);

}  // namespace kiln
