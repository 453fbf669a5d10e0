// Assigning arithmetic precision to layers.
//
// fp16 in kiln means fp16 storage with fp32 accumulation: a layer's weights are stored in fp16, it reads
// its activations rounded to fp16, accumulates in fp32 and writes its output rounded to fp16. Every
// backend computes exactly that (the reference executor simulates it), so results agree across them.
#pragma once

#include "graph/graph.h"

namespace kiln {

// Sets every live node to `precision` and stores the weights of fp16 nodes as F16 constants. FP8 layers
// and their quantize points (made by quant/fp8_rewrite.h) are left as they are: fp8 is assigned per
// layer by quantization recipes, not here. An FP8 layer reads E4M3 values, accumulates in fp32 and
// writes fp16.
void assign_precision(Graph& graph, Precision precision);

// Converts every constant to F32 (exact: F16 and BF16 widen losslessly) so kernels that compute in fp32
// can run the graph.
void widen_constants_to_f32(Graph& graph);

}  // namespace kiln
