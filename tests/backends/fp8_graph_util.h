// FP8 layers in test graphs, as quant/fp8_rewrite.h makes them: x -> quantize -> conv (FP8) <-
// dequantize <- E4M3 weight codes and per-channel scales; built node by node, or a whole network
// rewritten.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"

namespace kiln::testing {

// The quantize point of `x` (its E4M3 codes at `scale`, or its int8 codes).
inline ValueId quantize(SmallGraph& g, ValueId x, float scale, QuantFormat format = QuantFormat::kE4M3) {
  return g.node(OpKind::kQuantize, {x}, QuantizeAttrs{scale, format == QuantFormat::kInt8});
}

// An FP8 convolution reading the codes `q`: weights are E4M3 codes of uniform values in [-2, 2) (an
// int8 one, `format`: int8 codes).
inline ValueId fp8_conv(SmallGraph& g, ValueId q, std::int64_t out, const ConvAttrs& attrs, bool bias = true,
                        std::uint32_t seed = 31, QuantFormat format = QuantFormat::kE4M3) {
  const bool int8 = format == QuantFormat::kInt8;
  const std::int64_t in = g.graph.value(q).shape[1];
  const std::string name = "fp8_conv" + std::to_string(g.graph.nodes().size());
  const Shape weight{out, in / attrs.groups, attrs.kernel[0], attrs.kernel[1]};
  const ValueId codes = g.graph.add_constant(
      name + ".weight.codes", int8 ? random_tensor(weight, seed, -100.0f, 100.0f).to(DType::kI8)
                                   : random_tensor(weight, seed, -2.0f, 2.0f).to(DType::kF8E4M3));
  const ValueId scales = g.constant(name + ".weight.scales", {out}, 0.01f, 0.05f);
  const ValueId w = g.graph.add_node(OpKind::kDequantize, name + ".weight.dequantize", {codes, scales});
  std::vector<ValueId> inputs{q, w};
  if (bias) inputs.push_back(g.constant(name + ".bias", {out}, -0.5f, 0.5f));
  const ValueId y = g.graph.add_node(OpKind::kConv2d, name, inputs, attrs);
  g.producer(y).precision = int8 ? Precision::kI8 : Precision::kF8;
  return y;
}

// Every quantizable convolution but the first (a stem reading 3 channels, which FP8 kernels refuse).
inline std::vector<std::string> all_but_first_convolution(const Graph& graph) {
  std::vector<std::string> layers;
  for (const std::string& name : quantizable_layers(graph)) {
    if (name != graph.node(graph.topological_order().front()).name) layers.push_back(name);
  }
  return layers;
}

// `layers` rewritten to FP8 (or int8, `format`) with every activation scale `scale`, the rest fp16,
// constants widened back to f32 as the Engine hands graphs to backends; with `residuals`, the residual
// stream held in E4M3 (quantize_residuals()). Returns the tensors so held.
inline std::vector<std::string> to_fp8_network(Graph& graph, const std::vector<std::string>& layers,
                                               float scale = 0.02f, bool residuals = false,
                                               QuantFormat format = QuantFormat::kE4M3) {
  std::map<std::string, float> scales;
  for (const ValueId v : fp8_activation_inputs(graph, layers)) scales[graph.value(v).name] = scale;
  rewrite_to_fp8(graph, layers, {scales}, true, format);
  std::vector<std::string> held;
  if (residuals) held = quantize_residuals(graph);
  assign_precision(graph, Precision::kF16);
  graph.compact();
  widen_constants_to_f32(graph);
  return held;
}

}  // namespace kiln::testing
