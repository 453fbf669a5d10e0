#include "quant/fp8_rewrite.h"

#include <algorithm>

#include "core/error.h"
#include "quant/fake_quant.h"

namespace kiln {
namespace {

NodeId find_quantizable(const Graph& graph, const std::string& layer) {
  const auto id = graph.find_node(layer);
  require(id.has_value(), "fp8: no layer named '", layer, "'");
  const Node& node = graph.node(*id);
  require(node.op == OpKind::kConv2d && node.inputs.size() >= 2 && graph.value(node.inputs[1]).is_constant(),
          "fp8: layer '", layer, "' is not a convolution with a constant weight");
  require(node.precision != Precision::kF8, "fp8: layer '", layer, "' is already FP8");
  return *id;
}

// E4M3 codes of weight / scale, one scale per output channel.
Tensor weight_codes(const Tensor& weight, const std::vector<float>& scales) {
  const Tensor f32 = weight.dtype() == DType::kF32 ? weight : weight.to(DType::kF32);
  Tensor codes(DType::kF8E4M3, f32.shape());
  const auto values = f32.f32();
  auto* out = codes.mutable_data<std::uint8_t>();
  const std::size_t per_channel = values.size() / scales.size();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = f32_to_e4m3(values[i] / scales[i / per_channel]);
  return codes;
}

}  // namespace

std::vector<ValueId> fp8_activation_inputs(const Graph& graph, const std::vector<std::string>& layers) {
  std::vector<ValueId> inputs;
  for (const std::string& layer : layers) {
    const ValueId x = graph.node(find_quantizable(graph, layer)).inputs[0];
    if (std::find(inputs.begin(), inputs.end(), x) == inputs.end()) inputs.push_back(x);
  }
  return inputs;
}

std::vector<Fp8Layer> rewrite_to_fp8(Graph& graph, const std::vector<std::string>& layers,
                                     const std::map<std::string, float>& activation_scales,
                                     bool per_channel_weights) {
  std::map<ValueId, ValueId> quantized;  // tensor -> its quantize point's output
  std::vector<Fp8Layer> report;
  for (const std::string& layer : layers) {
    const NodeId id = find_quantizable(graph, layer);
    const ValueId x = graph.node(id).inputs[0];
    const std::string x_name = graph.value(x).name;  // a copy: adding nodes moves the values
    const auto scale = activation_scales.find(x_name);
    require(scale != activation_scales.end(), "fp8: no calibrated scale for '", x_name,
            "', the input of layer '", layer, "'");
    auto point = quantized.find(x);
    if (point == quantized.end()) {
      const ValueId q =
          graph.add_node(OpKind::kQuantize, x_name + ".quantize", {x}, QuantizeAttrs{scale->second});
      point = quantized.emplace(x, q).first;
    }

    const Tensor weight = graph.value(graph.node(id).inputs[1]).constant;
    std::vector<float> scales =
        per_channel_weights
            ? per_channel_weight_scales(weight)
            : std::vector<float>(static_cast<std::size_t>(weight.dim(0)), per_tensor_weight_scale(weight));
    const ValueId codes = graph.add_constant(layer + ".weight_fp8", weight_codes(weight, scales));
    const ValueId scale_values =
        graph.add_constant(layer + ".weight_scale", Tensor::from_f32({weight.dim(0)}, scales));
    const ValueId dequantized =
        graph.add_node(OpKind::kDequantize, layer + ".weight_dequantize", {codes, scale_values});

    Node& node = graph.node(id);  // re-fetched: add_node may have moved the node storage
    node.inputs[0] = point->second;
    node.inputs[1] = dequantized;
    node.precision = Precision::kF8;
    const auto [low, high] = std::minmax_element(scales.begin(), scales.end());
    report.push_back({layer, x_name, scale->second, *low, *high});
  }
  return report;
}

}  // namespace kiln
