#include "backends/cuda/program/quantize_fusion.h"

#include "passes/rewrite_util.h"

namespace kiln::cuda {
namespace {

bool is_quantize(const Graph& graph, NodeId id) { return graph.node(id).op == OpKind::kQuantize; }

// Whether two quantize points of one value write the same codes (one grid, one scale).
bool same_codes(const Graph& graph, NodeId a, NodeId b) {
  const QuantizeAttrs& x = graph.node(a).attr<QuantizeAttrs>();
  const QuantizeAttrs& y = graph.node(b).attr<QuantizeAttrs>();
  return x.int8 == y.int8 && x.scale == y.scale;
}

// Whether someone besides the quantize points fused into `producer` reads its output.
bool value_read_elsewhere(const Graph& graph, const passes::Consumers& consumers, const Fusions& f,
                          NodeId producer) {
  const ValueId value = graph.node(producer).output;
  if (passes::is_graph_output(graph, value)) return true;
  for (const NodeId reader : consumers[static_cast<std::size_t>(value)]) {
    if (!is_quantize(graph, reader) || f.codes_writer[static_cast<std::size_t>(reader)] != producer)
      return true;
  }
  return false;
}

}  // namespace

bool writes_codes(const Graph& graph, const Fusions& f, NodeId producer) {
  const auto index = static_cast<std::size_t>(producer);
  if (f.absorbed[index]) return false;
  switch (graph.node(producer).op) {
    case OpKind::kConv2d:  // the unfused convolution and kiln's epilogue kernel (conv_candidates.cpp)
      return f.squeeze_into_expand[index] == kNoNode && f.pool_into_squeeze[index] == kNoNode;
    case OpKind::kAdd:  // alone or as a convolution's residual epilogue
    case OpKind::kActivation:
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool:  // with the radix sum it pools, if any
    case OpKind::kRadixWeightedSum:
      return true;
    default:
      return false;
  }
}

void find_quantize_fusions(const Graph& graph, const std::vector<NodeId>& order,
                           const passes::Consumers& consumers, Fusions& f) {
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op != OpKind::kQuantize) continue;
    const NodeId producer = graph.value(node.inputs[0]).producer;
    if (producer == kNoNode) continue;
    if (!writes_codes(graph, f, producer)) continue;
    NodeId& first = f.quantize_into_producer[static_cast<std::size_t>(producer)];
    // The producer writes one set of codes: a second grid or scale keeps its own step.
    if (first != kNoNode && !same_codes(graph, first, id)) continue;
    if (first == kNoNode) first = id;
    f.codes_writer[static_cast<std::size_t>(id)] = producer;
    f.absorbed[static_cast<std::size_t>(id)] = true;
  }
  for (const NodeId id : order) {
    if (f.quantize_into_producer[static_cast<std::size_t>(id)] != kNoNode)
      f.keeps_value[static_cast<std::size_t>(id)] = value_read_elsewhere(graph, consumers, f, id);
  }
}

}  // namespace kiln::cuda
