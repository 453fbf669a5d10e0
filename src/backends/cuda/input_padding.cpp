#include "backends/cuda/input_padding.h"

#include <algorithm>

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {
namespace {

bool is_dense_fp16_conv(const Node& node) {
  return node.op == OpKind::kConv2d && node.precision != Precision::kF8 && node.attr<ConvAttrs>().groups == 1;
}

bool padding_pays(const Graph& graph, ValueId input, const std::vector<NodeId>& readers, const Shape& shape) {
  if (shape.size() != 4 || shape[1] >= kPaddedInputChannels) return false;
  if (std::ranges::find(graph.outputs(), input) != graph.outputs().end()) return false;
  bool read = false;
  for (const NodeId reader : readers) {
    if (!is_dense_fp16_conv(graph.node(reader)) || graph.node(reader).inputs[0] != input) return false;
    read = true;
  }
  return read;
}

}  // namespace

bool input_padding_enabled() { return env_switch("KILN_CUDA_PAD_INPUTS", false); }

InputPadding find_input_padding(const Graph& graph, const std::vector<Shape>& shapes, Elem elem) {
  InputPadding padding;
  if (elem != Elem::kF16 || !input_padding_enabled()) return padding;
  padding.channels.assign(shapes.size(), 0);
  const std::vector<std::vector<NodeId>> readers = graph.consumers();
  for (const ValueId input : graph.inputs()) {
    const auto v = static_cast<std::size_t>(input);
    if (padding_pays(graph, input, readers[v], shapes[v]))
      padding.channels[static_cast<std::size_t>(input)] = kPaddedInputChannels;
  }
  return padding;
}

std::vector<Shape> stored_shapes(std::vector<Shape> shapes, const InputPadding& padding) {
  for (std::size_t v = 0; v < padding.channels.size(); ++v) {
    if (padding.channels[v] > 0) shapes[v][1] = padding.channels[v];
  }
  return shapes;
}

}  // namespace kiln::cuda
