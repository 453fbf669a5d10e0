// How much arithmetic one image costs: the multiply-adds of a graph's convolutions and linear layers.
// Backends weigh it when a precision pays only on large enough networks (Backend::better_default).
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace kiln {

// Multiply-adds per image of the live convolutions and linear layers (each output element costs one per
// weight of its output channel); other operators are not counted.
std::int64_t multiply_adds_per_image(const Graph& graph);

}  // namespace kiln
