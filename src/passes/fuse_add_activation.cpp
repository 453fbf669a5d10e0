// fuse_add_activation: add -> relu (the end of every residual block) becomes one add whose
// AddAttrs::activation applies the relu to the sum. Only relu is fused: it is what residual blocks
// use, and it is exact at any precision, so the fused node's precision does not matter.
#include <optional>

#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

using passes::Consumers;

// Match: the relu that reads the add's output, if it is the output's only reader.
std::optional<NodeId> relu_after(const Graph& graph, const Consumers& consumers, const Node& add) {
  const std::optional<NodeId> reader = passes::sole_reader(graph, consumers, add.output);
  if (!reader) return std::nullopt;
  const Node& candidate = graph.node(*reader);
  if (candidate.op != OpKind::kActivation ||
      candidate.attr<ActivationAttrs>().activation != Activation::kRelu) {
    return std::nullopt;
  }
  return reader;
}

// Check: the add has no activation of its own yet.
bool safe_to_fuse(const Node& add) { return add.attr<AddAttrs>().activation == Activation::kNone; }

}  // namespace

PassChanges fuse_add_activation(Graph& graph) {
  PassChanges changes;
  Consumers consumers = graph.consumers();
  for (const NodeId add_id : graph.topological_order()) {
    if (graph.node(add_id).dead || graph.node(add_id).op != OpKind::kAdd) continue;
    if (!safe_to_fuse(graph.node(add_id))) continue;
    const std::optional<NodeId> relu_id = relu_after(graph, consumers, graph.node(add_id));
    if (!relu_id) continue;
    // Apply.
    Node& add = graph.node(add_id);
    add.attr<AddAttrs>().activation = Activation::kRelu;
    changes.push_back(cat("fused ", graph.node(*relu_id).name, " (relu) into ", add.name));
    passes::bypass(graph, *relu_id, add.output);
    consumers = graph.consumers();
  }
  return changes;
}

}  // namespace kiln
