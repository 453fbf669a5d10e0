// The storage precision of a CUDA program: one for the whole graph, fp16 (f32 accumulation) or f32; FP8
// convolutions (E4M3 in, fp16 out) and their quantize points sit among fp16 layers.
#pragma once

#include <vector>

#include "backends/cuda/kernels/kernel_types.h"
#include "graph/graph.h"

namespace kiln::cuda {

// The element type every activation is stored in; fails on mixed precisions and on FP8 layers among
// f32 ones.
Elem storage_elem(const Graph& graph, const std::vector<NodeId>& order);

}  // namespace kiln::cuda
