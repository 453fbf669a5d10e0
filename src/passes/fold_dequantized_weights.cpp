#include "passes/fold_dequantized_weights.h"

#include "reference/kernels.h"
#include "core/error.h"

namespace kiln {
namespace {

// Match: a live dequantize point whose codes and scales are both constants.
bool dequantizes_constants(const Graph& graph, const Node& node) {
  return !node.dead && node.op == OpKind::kDequantize && graph.value(node.inputs[0]).is_constant() &&
         graph.value(node.inputs[1]).is_constant();
}

}  // namespace

PassChanges fold_dequantized_weights(Graph& graph) {
  PassChanges changes;
  for (std::size_t id = 0; id < graph.nodes().size(); ++id) {
    Node& node = graph.node(static_cast<NodeId>(id));
    if (!dequantizes_constants(graph, node)) continue;
    Tensor weights =
        reference::dequantize(graph.value(node.inputs[0]).constant, graph.value(node.inputs[1]).constant);
    // Apply: the output keeps its id and name, now a constant with no producer.
    Value& output = graph.value(node.output);
    output.constant = std::move(weights);
    output.dtype = DType::kF32;
    output.producer = kNoNode;
    node.dead = true;
    changes.push_back(cat("folded ", node.name, " (dequantize) into f32 weights ", shape_str(output.shape)));
  }
  return changes;
}

}  // namespace kiln
