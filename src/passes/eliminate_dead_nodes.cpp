// eliminate_dead_nodes: nodes whose output nothing reads and that are not graph outputs are removed.
// Visiting nodes in reverse topological order removes a whole unused branch in one run: once a node
// goes, its producers may lose their last reader.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

PassChanges eliminate_dead_nodes(Graph& graph) {
  PassChanges changes;
  std::vector<std::size_t> readers(graph.values().size(), 0);
  const passes::Consumers consumers = graph.consumers();
  for (std::size_t i = 0; i < consumers.size(); ++i) readers[i] = consumers[i].size();
  for (const ValueId output : graph.outputs()) ++readers[static_cast<std::size_t>(output)];

  std::vector<NodeId> order = graph.topological_order();
  std::reverse(order.begin(), order.end());
  for (const NodeId id : order) {
    Node& node = graph.node(id);
    // Match and check: no live reader and not a graph output (counted as a reader above).
    if (readers[static_cast<std::size_t>(node.output)] != 0) continue;
    // Apply.
    node.dead = true;
    changes.push_back(cat("removed ", node.name, " (output unused)"));
    std::vector<ValueId> distinct = node.inputs;  // consumers() counts a node once per value it reads
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (const ValueId input : distinct) --readers[static_cast<std::size_t>(input)];
  }
  return changes;
}

}  // namespace kiln
