// eliminate_identity: nodes whose output equals their (first) input are bypassed. Builders emit them
// when a config turns a stage off (an avg-pool shortcut with kernel 1, a radix of 1) and a flatten
// may meet a tensor that is already [N, C].
#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

bool is_identity_window(const PoolAttrs& attrs) {
  return attrs.kernel == std::array<std::int64_t, 2>{1, 1} &&
         attrs.stride == std::array<std::int64_t, 2>{1, 1} &&
         attrs.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
}

// Match: does this node return its input unchanged? Every operator is listed so that a new one needs a
// decision here.
bool computes_identity(const Graph& graph, const Node& node) {
  switch (node.op) {
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
      // One element per window, none of them padding: ceil_mode and count_include_pad do not matter.
      return is_identity_window(node.attr<PoolAttrs>());
    case OpKind::kFlatten:
      return graph.value(node.inputs[0]).shape.size() == 2;
    case OpKind::kRadixSum:
      return node.attr<RadixAttrs>().radix == 1;
    case OpKind::kActivation:
      return node.attr<ActivationAttrs>().activation == Activation::kNone;
    case OpKind::kConv2d:
    case OpKind::kBatchNorm:
    case OpKind::kAdd:
    case OpKind::kGlobalAvgPool:  // would be an identity only on 1x1 maps, which shapes cannot promise
    case OpKind::kLinear:
    case OpKind::kRadixSoftmax:      // radix 1 is a sigmoid
    case OpKind::kRadixWeightedSum:  // radix 1 still multiplies by the weights
    case OpKind::kQuantize:
    case OpKind::kDequantize:
    case OpKind::kChannelScale:  // the gate is data
    case OpKind::kConcat:        // a single input is kept: backends need not support a copy of one
    case OpKind::kChannelSlice:
    case OpKind::kUpsample:
    case OpKind::kAttention:
    case OpKind::kDetectDecode:
      return false;
  }
  return false;
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
