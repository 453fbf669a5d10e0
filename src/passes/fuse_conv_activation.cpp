// fuse_conv_activation: conv2d -> activation (relu, silu, sigmoid) becomes one conv2d whose
// ConvAttrs::activation is applied after the bias. The conv keeps its name and its output value takes
// over the readers of the activation's output.
#include <optional>

#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

using passes::Consumers;

// Match: the activation node that reads the conv's output, if it is the output's only reader.
std::optional<NodeId> activation_after(const Graph& graph, const Consumers& consumers, const Node& conv) {
  const std::optional<NodeId> reader = passes::sole_reader(graph, consumers, conv.output);
  if (!reader || graph.node(*reader).op != OpKind::kActivation) return std::nullopt;
  return reader;
}

// Check: the conv has no activation yet (two cannot be stacked in one attribute), the activation
// does something (a 'none' activation is eliminate_identity's business; fusing it would report a
// change that changes nothing), and the fused activation runs at a precision that gives the same
// result: relu is exact at any precision, silu and sigmoid only when both nodes share one.
bool safe_to_fuse(const Node& conv, const Node& activation) {
  if (conv.attr<ConvAttrs>().activation != Activation::kNone) return false;
  const Activation kind = activation.attr<ActivationAttrs>().activation;
  if (kind == Activation::kNone) return false;
  return kind == Activation::kRelu || conv.precision == activation.precision;
}

}  // namespace

PassChanges fuse_conv_activation(Graph& graph) {
  PassChanges changes;
  Consumers consumers = graph.consumers();
  for (const NodeId conv_id : graph.topological_order()) {
    if (graph.node(conv_id).dead || graph.node(conv_id).op != OpKind::kConv2d) continue;
    const std::optional<NodeId> activation_id = activation_after(graph, consumers, graph.node(conv_id));
    if (!activation_id || !safe_to_fuse(graph.node(conv_id), graph.node(*activation_id))) continue;
    // Apply.
    Node& conv = graph.node(conv_id);
    const Node& activation = graph.node(*activation_id);
    const Activation kind = activation.attr<ActivationAttrs>().activation;
    conv.attr<ConvAttrs>().activation = kind;
    changes.push_back(cat("fused ", activation.name, " (", activation_name(kind), ") into ", conv.name));
    passes::bypass(graph, *activation_id, conv.output);
    consumers = graph.consumers();
  }
  return changes;
}

}  // namespace kiln
