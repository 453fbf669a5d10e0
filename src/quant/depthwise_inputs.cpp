#include "quant/depthwise_inputs.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {

std::string_view depthwise_input_scales_name(DepthwiseInputScales scales) {
  switch (scales) {
    case DepthwiseInputScales::kPerTensor:
      return "per-tensor";
    case DepthwiseInputScales::kPerChannel:
      return "per-channel";
  }
  return "unknown";
}

std::optional<DepthwiseInputScales> depthwise_input_scales_from_name(std::string_view name) {
  for (const DepthwiseInputScales scales :
       {DepthwiseInputScales::kPerTensor, DepthwiseInputScales::kPerChannel}) {
    if (depthwise_input_scales_name(scales) == name) return scales;
  }
  return std::nullopt;
}

bool is_depthwise_conv(const Graph& graph, const Node& node) {
  if (node.op != OpKind::kConv2d || node.inputs.size() < 2) return false;
  const Shape& x = graph.value(node.inputs[0]).shape;
  const Shape& w = graph.value(node.inputs[1]).shape;
  const std::int64_t groups = node.attr<ConvAttrs>().groups;
  return x.size() == 4 && w.size() == 4 && groups == x[1] && groups == w[0];
}

namespace {

// Per input of `layers`, in the order the layers first read them: whether each reader is depthwise.
std::vector<std::pair<ValueId, std::vector<bool>>> readers_by_input(const Graph& graph,
                                                                    const std::vector<std::string>& layers) {
  std::vector<std::pair<ValueId, std::vector<bool>>> inputs;
  for (const std::string& layer : layers) {
    const auto id = graph.find_node(layer);
    require(id.has_value(), "quantization: no layer named '", layer, "'");
    const Node& node = graph.node(*id);
    const ValueId x = node.inputs.at(0);
    auto known =
        std::find_if(inputs.begin(), inputs.end(), [&](const auto& entry) { return entry.first == x; });
    if (known == inputs.end()) known = inputs.insert(inputs.end(), {x, {}});
    known->second.push_back(is_depthwise_conv(graph, node));
  }
  return inputs;
}

}  // namespace

std::vector<ValueId> depthwise_only_inputs(const Graph& graph, const std::vector<std::string>& layers) {
  std::vector<ValueId> inputs;
  for (const auto& [value, depthwise] : readers_by_input(graph, layers)) {
    if (std::all_of(depthwise.begin(), depthwise.end(), [](bool d) { return d; })) inputs.push_back(value);
  }
  return inputs;
}

std::vector<ValueId> depthwise_read_inputs(const Graph& graph, const std::vector<std::string>& layers) {
  std::vector<ValueId> inputs;
  for (const auto& [value, depthwise] : readers_by_input(graph, layers)) {
    if (std::any_of(depthwise.begin(), depthwise.end(), [](bool d) { return d; })) inputs.push_back(value);
  }
  return inputs;
}

}  // namespace kiln
