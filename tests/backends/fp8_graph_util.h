// FP8 layers in small test graphs, as quant/fp8_rewrite.h makes them: x -> quantize -> conv (FP8) <-
// dequantize <- E4M3 weight codes and per-channel scales.
#pragma once

#include <cstdint>
#include <string>

#include "onednn_graph_util.h"

namespace kiln::testing {

// The quantize point of `x` (its E4M3 codes at `scale`).
inline ValueId quantize(SmallGraph& g, ValueId x, float scale) {
  return g.node(OpKind::kQuantize, {x}, QuantizeAttrs{scale});
}

// An FP8 convolution reading the codes `q`: weights are E4M3 codes of uniform values in [-2, 2).
inline ValueId fp8_conv(SmallGraph& g, ValueId q, std::int64_t out, const ConvAttrs& attrs, bool bias = true,
                        std::uint32_t seed = 31) {
  const std::int64_t in = g.graph.value(q).shape[1];
  const std::string name = "fp8_conv" + std::to_string(g.graph.nodes().size());
  const Shape weight{out, in / attrs.groups, attrs.kernel[0], attrs.kernel[1]};
  const ValueId codes = g.graph.add_constant(name + ".weight.codes",
                                             random_tensor(weight, seed, -2.0f, 2.0f).to(DType::kF8E4M3));
  const ValueId scales = g.constant(name + ".weight.scales", {out}, 0.01f, 0.05f);
  const ValueId w = g.graph.add_node(OpKind::kDequantize, name + ".weight.dequantize", {codes, scales});
  std::vector<ValueId> inputs{q, w};
  if (bias) inputs.push_back(g.constant(name + ".bias", {out}, -0.5f, 0.5f));
  const ValueId y = g.graph.add_node(OpKind::kConv2d, name, inputs, attrs);
  g.producer(y).precision = Precision::kF8;
  return y;
}

}  // namespace kiln::testing
