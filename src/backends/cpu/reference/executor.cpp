#include "backends/cpu/reference/executor.h"

#include "backends/cpu/reference/kernels.h"
#include "core/error.h"
#include "graph/precision_assignment.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

// A tensor as a layer of `precision` stores it: fp16 and fp8 layers (whose FP8 products accumulate in
// fp32) write fp16, bf16 layers bf16.
Tensor stored(const Tensor& tensor, Precision precision) {
  Tensor rounded = tensor.clone();
  for (float& value : rounded.mutable_f32()) value = rounded_to_storage(value, precision);
  return rounded;
}

// fp16 and bf16 layers read their activations rounded to their storage; fp8 layers read theirs
// through kQuantize.
bool reads_rounded(Precision precision) { return storage_dtype(precision).has_value(); }

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
  for (std::size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<std::size_t>(graph.inputs()[i])] = inputs[i];
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    if (graph.values()[i].is_constant()) values[i] = graph.values()[i].constant;
  }

  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    const bool rounded = reads_rounded(node.precision);
    std::vector<Tensor> rounded_inputs;
    rounded_inputs.reserve(node.inputs.size());
    std::vector<const Tensor*> node_inputs;
    for (const ValueId input : node.inputs) {
      const Tensor& tensor = values[static_cast<std::size_t>(input)];
      if (rounded && !graph.value(input).is_constant()) {
        rounded_inputs.push_back(stored(tensor, node.precision));
        node_inputs.push_back(&rounded_inputs.back());
      } else {
        node_inputs.push_back(&tensor);
      }
    }
    Tensor output = reference::run_op(node, node_inputs);
    if (node.precision != Precision::kF32) output = stored(output, node.precision);
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
