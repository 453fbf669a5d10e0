// fold_constants: a node whose inputs are all constants computes the same tensor on every run, so it
// is evaluated once, with the reference kernels, and its output value becomes that constant (same id,
// same name, so readers and graph outputs need no redirection).
#include <algorithm>
#include <vector>

#include "reference/executor.h"
#include "core/error.h"
#include "passes/pass.h"

namespace kiln {

namespace {

// Match: every input is a constant.
bool has_only_constant_inputs(const Graph& graph, const Node& node) {
  return !node.inputs.empty() && std::all_of(node.inputs.begin(), node.inputs.end(),
                                             [&](ValueId id) { return graph.value(id).is_constant(); });
}

// Check: the reference kernels take f32 only, and the result must have a concrete shape.
bool safe_to_evaluate(const Graph& graph, const Node& node) {
  for (const ValueId id : node.inputs) {
    if (graph.value(id).constant.dtype() != DType::kF32) return false;
  }
  const Shape& shape = graph.value(node.output).shape;
  return std::all_of(shape.begin(), shape.end(), [](std::int64_t extent) { return extent >= 0; });
}

// Runs the node alone: a one-node graph whose inputs are copies of the constants (storage is shared,
// not duplicated), through the same executor that is the oracle for everything else.
Tensor evaluate(const Graph& graph, const Node& node) {
  Graph single;
  std::vector<ValueId> inputs;
  for (const ValueId id : node.inputs) {
    inputs.push_back(single.add_constant(graph.value(id).name, graph.value(id).constant));
  }
  single.mark_output(single.add_node(node.op, node.name, std::move(inputs), node.attrs));
  return run_reference(single, {}).front();
}

}  // namespace

PassChanges fold_constants(Graph& graph) {
  PassChanges changes;
  // In topological order a chain of constant nodes folds in one run: each result is a constant by
  // the time its reader is visited.
  for (const NodeId id : graph.topological_order()) {
    Node& node = graph.node(id);
    if (!has_only_constant_inputs(graph, node) || !safe_to_evaluate(graph, node)) continue;
    Tensor result = evaluate(graph, node);
    // Apply: the output value keeps its id and name but now holds the tensor and has no producer.
    Value& output = graph.value(node.output);
    output.constant = std::move(result);
    output.dtype = DType::kF32;
    output.producer = kNoNode;
    node.dead = true;
    changes.push_back(cat("folded ", node.name, " (", op_kind_name(node.op), ") into a constant ",
                          shape_str(output.shape)));
  }
  return changes;
}

}  // namespace kiln
