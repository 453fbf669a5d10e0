// Which int8 activations get one scale per channel. A depthwise convolution (groups == input channels ==
// output channels) reads each input channel alone, so its output channel c depends on channel c's codes
// and scale only: a scale per channel costs the int8 kernel nothing (input scale x weight scale is per
// output channel already), where one scale per tensor, set by the widest channel, leaves narrow channels
// a few codes. A tensor gets per-channel scales when every quantized layer reading it is depthwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// `kiln build --depthwise-input-scales`: int8 only; per-channel is the default.
enum class DepthwiseInputScales : std::uint8_t { kPerTensor, kPerChannel };
std::string_view depthwise_input_scales_name(DepthwiseInputScales scales);  // "per-tensor", "per-channel"
std::optional<DepthwiseInputScales> depthwise_input_scales_from_name(std::string_view name);

// A convolution whose every output channel reads one input channel, its own: groups == input channels ==
// output channels.
bool is_depthwise_conv(const Graph& graph, const Node& node);

// The inputs of `layers` (quantizable convolutions, quant/layer_selection.h) whose every reader among
// `layers` is a depthwise convolution, in execution order: the tensors an int8 build quantizes per channel.
std::vector<ValueId> depthwise_only_inputs(const Graph& graph, const std::vector<std::string>& layers);

// The inputs of any depthwise convolution among `layers`: what a calibration shared by several builds
// observes per channel, since each build's recipe may leave a different set of readers.
std::vector<ValueId> depthwise_read_inputs(const Graph& graph, const std::vector<std::string>& layers);

}  // namespace kiln
