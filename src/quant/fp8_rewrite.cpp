#include "quant/fp8_rewrite.h"

#include <algorithm>

#include "core/error.h"
#include "quant/depthwise_inputs.h"
#include "quant/fake_quant.h"

namespace kiln {
namespace {

NodeId find_quantizable(const Graph& graph, const std::string& layer) {
  const auto id = graph.find_node(layer);
  require(id.has_value(), "quantization: no layer named '", layer, "'");
  const Node& node = graph.node(*id);
  require(node.op == OpKind::kConv2d && node.inputs.size() >= 2 && graph.value(node.inputs[1]).is_constant(),
          "quantization: layer '", layer, "' is not a convolution with a constant weight");
  require(!is_quantized(node.precision), "quantization: layer '", layer, "' is already ",
          precision_name(node.precision));
  return *id;
}

// Codes of weight / scale, one scale per output channel: E4M3 codes, or int8 codes rounded as activations
// are (quantize_to_int8), which never reach -128 because the scale maps amax to 127.
Tensor weight_codes(const Tensor& weight, const std::vector<float>& scales, QuantFormat format) {
  const Tensor f32 = weight.dtype() == DType::kF32 ? weight : weight.to(DType::kF32);
  const bool int8 = format == QuantFormat::kInt8;
  Tensor codes(int8 ? DType::kI8 : DType::kF8E4M3, f32.shape());
  const auto values = f32.f32();
  const std::size_t per_channel = values.size() / scales.size();
  if (int8) {
    auto* out = codes.mutable_data<std::int8_t>();
    for (std::size_t i = 0; i < values.size(); ++i)
      out[i] = std::max<std::int8_t>(-127, quantize_to_int8(values[i], 1.0f / scales[i / per_channel]));
    return codes;
  }
  auto* out = codes.mutable_data<std::uint8_t>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = f32_to_e4m3(values[i] / scales[i / per_channel]);
  return codes;
}

// The quantize point of `layer`'s input: its tensor's one scale, or its channels' scales (int8, read by
// depthwise convolutions only, one scale per channel of the tensor).
QuantizeAttrs input_quantization(const Graph& graph, const Node& layer, const ActivationScales& scales,
                                 QuantFormat format) {
  const Value& x = graph.value(layer.inputs[0]);
  const bool int8 = format == QuantFormat::kInt8;
  const auto channels = scales.channels.find(x.name);
  if (channels == scales.channels.end()) {
    const auto scale = scales.tensors.find(x.name);
    require(scale != scales.tensors.end(), precision_name(precision_of(format)),
            ": no calibrated scale for '", x.name, "', the input of layer '", layer.name, "'");
    return QuantizeAttrs{scale->second, int8};
  }
  require(int8, "fp8: per-channel scales for '", x.name, "', the input of layer '", layer.name,
          "': only int8 quantizes activations per channel");
  require(is_depthwise_conv(graph, layer), "int8: per-channel scales for '", x.name,
          "', the input of layer '", layer.name,
          "', which is not a depthwise convolution (groups == channels == output channels)");
  const std::vector<float>& values = channels->second;
  require(x.shape.size() == 4 && static_cast<std::int64_t>(values.size()) == x.shape[1],
          "int8: ", values.size(), " channel scales for '", x.name, "' of shape ", shape_str(x.shape),
          ", the input of layer '", layer.name, "': expected one per channel");
  return QuantizeAttrs{*std::max_element(values.begin(), values.end()), true, values};
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
                                     const ActivationScales& activation_scales, bool per_channel_weights,
                                     QuantFormat format) {
  const bool int8 = format == QuantFormat::kInt8;
  const std::string_view suffix = int8 ? "int8" : "fp8";
  std::map<ValueId, ValueId> quantized;  // tensor -> its quantize point's output
  std::vector<Fp8Layer> report;
  for (const std::string& layer : layers) {
    const NodeId id = find_quantizable(graph, layer);
    const ValueId x = graph.node(id).inputs[0];
    const std::string x_name = graph.value(x).name;  // a copy: adding nodes moves the values
    const QuantizeAttrs attrs = input_quantization(graph, graph.node(id), activation_scales, format);
    auto point = quantized.find(x);
    if (point == quantized.end())
      point = quantized.emplace(x, graph.add_node(OpKind::kQuantize, x_name + ".quantize", {x}, attrs)).first;

    const Tensor weight = graph.value(graph.node(id).inputs[1]).constant;
    std::vector<float> scales = per_channel_weights
                                    ? per_channel_weight_scales(weight, format)
                                    : std::vector<float>(static_cast<std::size_t>(weight.dim(0)),
                                                         per_tensor_weight_scale(weight, format));
    const ValueId codes =
        graph.add_constant(cat(layer, ".weight_", suffix), weight_codes(weight, scales, format));
    const ValueId scale_values =
        graph.add_constant(layer + ".weight_scale", Tensor::from_f32({weight.dim(0)}, scales));
    const ValueId dequantized =
        graph.add_node(OpKind::kDequantize, layer + ".weight_dequantize", {codes, scale_values});

    Node& node = graph.node(id);  // re-fetched: add_node may have moved the node storage
    node.inputs[0] = point->second;
    node.inputs[1] = dequantized;
    node.precision = precision_of(format);
    const auto [low, high] = std::minmax_element(scales.begin(), scales.end());
    const float input_low = attrs.per_channel()
                                ? *std::min_element(attrs.channel_scales.begin(), attrs.channel_scales.end())
                                : attrs.scale;
    report.push_back({layer, x_name, attrs.scale, attrs.per_channel(), input_low, *low, *high});
  }
  return report;
}

namespace {

// An add closing a residual connection: its other input is a convolution without activation that only
// the add reads, so that an engine computes the add in that convolution's epilogue (and reads x there).
bool closes_residual(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers, const Node& add,
                     ValueId x) {
  if (add.op != OpKind::kAdd || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return false;
  const ValueId other = add.inputs[0] == x ? add.inputs[1] : add.inputs[0];
  const NodeId producer = graph.value(other).producer;
  return producer != kNoNode && graph.node(producer).op == OpKind::kConv2d &&
         graph.node(producer).attr<ConvAttrs>().activation == Activation::kNone &&
         consumers[static_cast<std::size_t>(other)].size() == 1;
}

}  // namespace

std::vector<std::string> quantize_residuals(Graph& graph) {
  const auto consumers = graph.consumers();
  const auto& outputs = graph.outputs();
  std::vector<std::pair<NodeId, NodeId>> redirects;  // an add -> the quantize point it reads instead
  std::vector<std::string> held;
  for (const NodeId id : graph.topological_order()) {
    const Node& point = graph.node(id);
    if (point.op != OpKind::kQuantize || point.attr<QuantizeAttrs>().per_channel()) continue;
    const ValueId x = point.inputs[0];
    if (graph.value(x).is_constant() || std::find(outputs.begin(), outputs.end(), x) != outputs.end()) continue;
    std::vector<NodeId> adds;
    bool only_residual_adds = true;
    for (const NodeId reader : consumers[static_cast<std::size_t>(x)]) {
      if (reader == id) continue;
      only_residual_adds = only_residual_adds && closes_residual(graph, consumers, graph.node(reader), x);
      adds.push_back(reader);
    }
    if (!only_residual_adds || adds.empty()) continue;
    for (const NodeId add : adds) redirects.emplace_back(add, id);
    held.push_back(graph.value(x).name);
  }
  for (const auto& [add, id] : redirects) {
    const Node& point = graph.node(id);
    for (ValueId& input : graph.node(add).inputs) {
      if (input == point.inputs[0]) input = point.output;
    }
  }
  return held;
}

}  // namespace kiln
