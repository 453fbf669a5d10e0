// Assigning arithmetic precision to layers.
//
// fp16 in kiln means fp16 storage with fp32 accumulation: a layer's weights are stored in fp16, it reads
// its activations rounded to fp16, accumulates in fp32 and writes its output rounded to fp16. Every
// backend computes exactly that (the reference executor simulates it), so results agree across them.
// bf16 is the same with bfloat16 storage (8 exponent bits like fp32, 8 significant bits): the reference
// executor simulates it exactly; the cpu backend runs it on oneDNN's bf16 kernels, which round where the
// simulation does except inside a convolution with a fused residual add (docs/log/ACCURACY_LOG.md, bf16).
#pragma once

#include <optional>

#include "graph/graph.h"

namespace kiln {

// Sets every live node to `precision` and stores the weights of fp16 / bf16 nodes as F16 / BF16 constants.
// FP8 layers and their quantize points (made by quant/fp8_rewrite.h) are left as they are: fp8 is assigned
// per layer by quantization recipes, not here. An FP8 layer reads E4M3 values, accumulates in fp32 and writes
// fp16. An int8 layer reads int8 codes, sums their products exactly (int32), dequantizes and writes f32.
void assign_precision(Graph& graph, Precision precision);

// The dtype a layer of `precision` stores its weights and activations in; empty for fp32, fp8 and int8.
std::optional<DType> storage_dtype(Precision precision);

// `value` as a layer of `precision` writes it: rounded to fp16 (fp16 and fp8 layers), to bf16, or as is
// (fp32 and int8).
float rounded_to_storage(float value, Precision precision);

// Converts every constant to F32 (exact: F16, BF16 and int8 codes widen losslessly) so kernels that compute
// in fp32 can run the graph.
void widen_constants_to_f32(Graph& graph);

}  // namespace kiln
