// Per-node precision. fp16 is "fp16 storage, fp32 accumulation", emulated on fp32 primitives exactly as
// the reference executor defines it: a node's constants are rounded to fp16 once at compile time, the
// activations it reads are rounded to fp16 (unless an fp16 node wrote them) and its output is rounded
// to fp16 after it runs. An fp8 node reads values a kQuantize already put on the E4M3 grid and weights a
// kDequantize made, computes in fp32 and writes fp16, as the reference executor defines it.
//
// bf16 is not emulated: bf16 convolutions, inner products and pooling run on oneDNN's bf16 kernels (bf16
// weights and activations, f32 accumulation, bias and post-ops, the output rounded to bf16 to nearest
// even), and their outputs stay bf16 in the workspace, so the next bf16 convolution reads them with no
// conversion. Steps on f32 kernels (the backend's own, the reference fallback) read a widened copy and
// write f32 rounded to bf16, which the next bf16 kernel narrows exactly.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln::onednn {

bool precision_supported(Precision precision);
// A node's constant as f32 values as the node's precision stores them.
Tensor prepare_constant(const Tensor& constant, Precision precision);
// The element type of the activations oneDNN's kernels read and write for a node in `precision`.
dnnl::memory::data_type kernel_type(Precision precision);
// Whether a node in `precision` reads its activations rounded to fp16 or bf16.
bool reads_rounded(Precision precision);
// Whether a node in `precision` writes its output rounded (to fp16, or to bf16).
bool writes_rounded(Precision precision);
// f32_to_bf16 (core/dtype.h) without branches, so that loops of it vectorize: round to nearest even on
// the upper 16 bits; a NaN keeps its sign and upper payload, made quiet.
inline std::uint16_t bf16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<std::uint16_t>(nan ? (bits >> 16) | 0x40u : (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Rounds `count` floats from `in` to what a node in `precision` writes, into `out` (which may be `in`).
void round_to_storage(const float* in, float* out, std::size_t count, Precision precision);

}  // namespace kiln::onednn
