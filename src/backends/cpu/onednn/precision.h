// Per-node precision on fp32 primitives. fp16 is "fp16 storage, fp32 accumulation", emulated exactly as
// the reference executor defines it: a node's constants are rounded to fp16 once at compile time, the
// activations it reads are rounded to fp16 (unless an fp16 node wrote them) and its output is rounded
// to fp16 after it runs. fp8 (E4M3 with stored scales, Node::quant) will slot in here; until then such
// nodes are refused.
#pragma once

#include <cstddef>

#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln::onednn {

bool precision_supported(Precision precision);
// A node's constant as f32 values as the node's precision stores them.
Tensor prepare_constant(const Tensor& constant, Precision precision);
// Whether a node in `precision` stores (reads and writes) values rounded below fp32.
bool stores_rounded(Precision precision);
// Rounds `count` floats from `in` to what `precision` stores, into `out` (which may be `in`).
void round_to_storage(const float* in, float* out, std::size_t count, Precision precision);

}  // namespace kiln::onednn
