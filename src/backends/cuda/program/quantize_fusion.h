// Which quantize points the CUDA backend computes in their input's producer (fusion.h): a producer
// kiln compiles with an epilogue kernel of its own writes the E4M3 codes of its output (from the value
// rounded to the storage type, exactly as the quantize kernel would) straight into the quantize point's
// buffer, and the quantize point gets no step. Where the value is read elsewhere too (a residual, a
// non-FP8 layer, a graph output) the producer writes both (a dual write). Quantize points of one value
// that share its grid and scale share one buffer of codes; one with another keeps its own step.
// int8 codes are written only by convolutions (alone or at their residual add's step): kiln's Hopper
// kernel writes them, and a convolution another kernel runs is followed by the int8 quantize kernel
// (conv_candidates.cpp). Host code only.
#pragma once

#include "backends/cuda/program/fusion.h"
#include "passes/rewrite_util.h"

namespace kiln::cuda {

// Whether `producer`'s step can write E4M3 codes of its output (squeeze_mlp launches and absorbed nodes
// cannot; neither can operators whose kernels have no codes epilogue).
bool writes_codes(const Graph& graph, const Fusions& f, NodeId producer);

// Whether `producer`'s step can write int8 codes: a convolution's, alone or at its residual add's step.
bool writes_int8_codes(const Graph& graph, const Fusions& f, NodeId producer);

// Sets f.quantize_into_producer, f.codes_writer and f.keeps_value (sized already), and marks the fused
// quantize points absorbed. Runs after the other fusions (it needs to know which nodes are absorbed).
void find_quantize_fusions(const Graph& graph, const std::vector<NodeId>& order,
                           const passes::Consumers& consumers, Fusions& f);

}  // namespace kiln::cuda
