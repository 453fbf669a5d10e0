// eliminate_identity: nodes whose output equals their (first) input are bypassed. Builders emit them
// when a config turns a stage off (an avg-pool shortcut with kernel 1, a radix of 1) and a flatten
// may meet a tensor that is already [N, C].
#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

// Match: does this node return its input unchanged? Each operator's rule is its row in op_info.h.
bool computes_identity(const Graph& graph, const Node& node) {
  const IdentityRule rule = op_info(node.op).computes_identity;
  return rule != nullptr && rule(graph, node);
}

// Check: the output has the input's shape, and a graph output is never redirected to a value no node
// produces (a graph input or constant as a graph output is something backends need not support).
bool safe_to_bypass(const Graph& graph, const Node& node) {
  if (node.inputs.size() != 1) return false;
  const Value& input = graph.value(node.inputs[0]);
  if (input.shape != graph.value(node.output).shape) return false;
  return input.producer != kNoNode || !passes::is_graph_output(graph, node.output);
}

}  // namespace

PassChanges eliminate_identity(Graph& graph) {
  PassChanges changes;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (!computes_identity(graph, node) || !safe_to_bypass(graph, node)) continue;
    changes.push_back(cat("removed ", node.name, " (", op_kind_name(node.op), " computing the identity)"));
    passes::bypass(graph, id, node.inputs[0]);  // apply
  }
  return changes;
}

}  // namespace kiln
