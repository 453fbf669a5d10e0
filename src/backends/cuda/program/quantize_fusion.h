// Which quantize points the CUDA backend computes in their input's producer (fusion.h): a producer
// kiln compiles with an epilogue kernel of its own writes the E4M3 or int8 codes of its output (from the
// value rounded to the storage type, exactly as the quantize kernel would) straight into the quantize
// point's buffer, and the quantize point gets no step. Where the value is read elsewhere too (a residual, a
// non-quantized layer, a graph output) the producer writes both (a dual write). Quantize points of one value
// that share its grid and scale share one buffer of codes; one with another keeps its own step. A
// convolution writing int8 codes runs on kiln's Hopper kernel, or another kernel followed by the quantize
// kernel (conv_candidates.cpp). Host code only.
#pragma once

#include "backends/cuda/program/fusion.h"
#include "passes/rewrite_util.h"

namespace kiln::cuda {

// Whether `producer`'s step can write codes of its output, on either grid (squeeze_mlp launches and
// absorbed nodes cannot; neither can operators whose kernels have no codes epilogue).
bool writes_codes(const Graph& graph, const Fusions& f, NodeId producer);

// Sets f.quantize_into_producer, f.codes_writer and f.keeps_value (sized already), and marks the fused
// quantize points absorbed. Runs after the other fusions (it needs to know which nodes are absorbed).
void find_quantize_fusions(const Graph& graph, const std::vector<NodeId>& order,
                           const passes::Consumers& consumers, Fusions& f);

}  // namespace kiln::cuda
