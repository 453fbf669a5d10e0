#include "runtime/reference_executor.h"

#include "backends/cpu/reference_kernels.h"
#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

Tensor run_node(const Node& node, const std::vector<const Tensor*>& in) {
  const auto optional_input = [&](std::size_t index) { return in.size() > index ? in[index] : nullptr; };
  switch (node.op) {
    case OpKind::kConv2d:
      return reference::conv2d(*in[0], *in[1], optional_input(2), node.attr<ConvAttrs>());
    case OpKind::kBatchNorm:
      return reference::batch_norm(*in[0], *in[1], *in[2], *in[3], *in[4], node.attr<BatchNormAttrs>().epsilon);
    case OpKind::kActivation:
      return reference::activation(*in[0], node.attr<ActivationAttrs>().activation);
    case OpKind::kAdd:
      return reference::add(*in[0], *in[1], node.attr<AddAttrs>().activation);
    case OpKind::kMaxPool2d:
      return reference::max_pool2d(*in[0], node.attr<PoolAttrs>());
    case OpKind::kAvgPool2d:
      return reference::avg_pool2d(*in[0], node.attr<PoolAttrs>());
    case OpKind::kGlobalAvgPool:
      return reference::global_avg_pool(*in[0]);
    case OpKind::kFlatten:
      return reference::flatten(*in[0]);
    case OpKind::kLinear:
      return reference::linear(*in[0], *in[1], optional_input(2));
    case OpKind::kRadixSum:
      return reference::radix_sum(*in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixSoftmax:
      return reference::radix_softmax(*in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixWeightedSum:
      return reference::radix_weighted_sum(*in[0], *in[1], node.attr<RadixAttrs>());
  }
  fail("layer '", node.name, "': unknown operator");
}

}  // namespace

std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs,
                                  const NodeObserver& observer) {
  std::vector<Shape> input_shapes;
  for (const Tensor& input : inputs) {
    require(input.dtype() == DType::kF32, "graph inputs must be f32, got ", dtype_name(input.dtype()));
    input_shapes.push_back(input.shape());
  }
  infer_shapes(graph, input_shapes);  // validates the inputs against the graph before any work

  const std::vector<NodeId> order = graph.topological_order();
  // Remaining readers of each value; a value is dropped when its count reaches zero.
  std::vector<int> readers(graph.values().size(), 0);
  for (const NodeId id : order) {
    for (const ValueId input : graph.node(id).inputs) ++readers[static_cast<std::size_t>(input)];
  }
  for (const ValueId output : graph.outputs()) ++readers[static_cast<std::size_t>(output)];

  std::vector<Tensor> values(graph.values().size());
  for (std::size_t i = 0; i < inputs.size(); ++i) values[static_cast<std::size_t>(graph.inputs()[i])] = inputs[i];
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    if (graph.values()[i].is_constant()) values[i] = graph.values()[i].constant;
  }

  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    std::vector<const Tensor*> node_inputs;
    for (const ValueId input : node.inputs) node_inputs.push_back(&values[static_cast<std::size_t>(input)]);
    Tensor output = run_node(node, node_inputs);
    if (observer) observer(node, output);
    values[static_cast<std::size_t>(node.output)] = std::move(output);
    for (const ValueId input : node.inputs) {
      const auto index = static_cast<std::size_t>(input);
      if (--readers[index] == 0 && !graph.value(input).is_constant()) values[index] = Tensor{};
    }
  }
  std::vector<Tensor> outputs;
  for (const ValueId output : graph.outputs()) outputs.push_back(values[static_cast<std::size_t>(output)]);
  return outputs;
}

}  // namespace kiln
