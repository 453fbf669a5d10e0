#include "backends/common/fusion_match.h"

namespace kiln::backends {

NodeId fusable_producer(const Graph& graph, const passes::Consumers& consumers, ValueId value, NodeId reader,
                        OpKind op) {
  const NodeId producer = graph.value(value).producer;
  if (producer == kNoNode || graph.node(producer).dead || graph.node(producer).op != op) return kNoNode;
  const std::optional<NodeId> only = passes::sole_reader(graph, consumers, value);
  return only == reader ? producer : kNoNode;
}

}  // namespace kiln::backends
