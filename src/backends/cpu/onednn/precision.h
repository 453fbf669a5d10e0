// Per-node precision on fp32 primitives. fp16 is "fp16 storage, fp32 accumulation", emulated exactly:
// a node's constants are rounded to fp16 once at compile time and its output is rounded to fp16 after
// it runs. fp8 (E4M3 with stored scales) will slot in here; until then such nodes are refused.
#pragma once

#include <cstddef>

#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln::onednn {

bool precision_supported(Precision precision);
// A node's constant as f32 values as the node's precision stores them.
Tensor prepare_constant(const Tensor& constant, Precision precision);
// Whether outputs of a node in `precision` need rounding after the fp32 primitive ran.
bool rounds_output(Precision precision);
// Rounds `count` floats in place to what `precision` stores.
void round_output(float* data, std::size_t count, Precision precision);

}  // namespace kiln::onednn
