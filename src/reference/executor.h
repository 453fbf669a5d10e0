// Runs a graph node by node on the CPU reference kernels: the slow, obviously correct path every
// engine is checked against.
#pragma once

#include <functional>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// Called with each node and its output as soon as it is computed (calibration, per-layer errors).
using NodeObserver = std::function<void(const Node& node, const Tensor& output)>;

// Runs `graph` on `inputs` (one f32 tensor per graph input) and returns its outputs. Intermediate
// tensors are released after their last reader.
std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs,
                                  const NodeObserver& observer = nullptr);

}  // namespace kiln
