#include "runtime/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"

namespace kiln {
namespace {

// Kahn's algorithm over the nodes not skipped: among the ready nodes the earliest with the current
// placement runs next; when none has it, the earliest ready node does and its placement becomes current.
std::vector<NodeId> grouped_order(const Graph& graph, const std::vector<int>& placement,
                                  const std::vector<bool>& skipped) {
  const std::size_t count = graph.nodes().size();
  std::vector<int> pending(count, 0);
  std::vector<std::vector<NodeId>> readers(count);
  const auto counted = [&](NodeId id) {
    return !graph.node(id).dead && !skipped[static_cast<std::size_t>(id)];
  };
  for (std::size_t i = 0; i < count; ++i) {
    if (!counted(static_cast<NodeId>(i))) continue;
    for (const ValueId input : graph.node(static_cast<NodeId>(i)).inputs) {
      const NodeId producer = graph.value(input).producer;
      if (producer == kNoNode || !counted(producer)) continue;
      ++pending[i];
      readers[static_cast<std::size_t>(producer)].push_back(static_cast<NodeId>(i));
    }
  }
  std::map<int, std::set<NodeId>> ready;  // per placement, by node id
  for (std::size_t i = 0; i < count; ++i) {
    const auto id = static_cast<NodeId>(i);
    if (counted(id) && pending[i] == 0) ready[placement[i]].insert(id);
  }
  std::vector<NodeId> order;
  int current = -1;  // none yet: the earliest ready node sets it
  while (!ready.empty()) {
    if (!ready.contains(current)) {
      const auto earliest = std::min_element(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
        return *a.second.begin() < *b.second.begin();
      });
      current = earliest->first;
    }
    std::set<NodeId>& candidates = ready[current];
    const NodeId next = *candidates.begin();
    candidates.erase(candidates.begin());
    if (candidates.empty()) ready.erase(current);
    order.push_back(next);
    for (const NodeId reader : readers[static_cast<std::size_t>(next)]) {
      const auto r = static_cast<std::size_t>(reader);
      if (--pending[r] == 0) ready[placement[r]].insert(reader);
    }
  }
  return order;
}

// Builds `segment.graph` from its nodes: outside values become inputs, constants are copied in, the
// values `exported` marks become outputs.
void build_segment_graph(const Graph& graph, const std::vector<bool>& exported, Segment& segment) {
  std::vector<ValueId> local(graph.values().size(), -1);
  const auto local_value = [&](ValueId v) {
    ValueId& id = local[static_cast<std::size_t>(v)];
    if (id >= 0) return id;
    const Value& value = graph.value(v);
    if (value.is_constant()) {
      id = segment.graph.add_constant(value.name, value.constant);
    } else {
      id = segment.graph.add_input(value.name, value.shape, value.dtype);
      segment.inputs.push_back(v);
    }
    return id;
  };
  for (const NodeId id : segment.nodes) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (const ValueId v : node.inputs) inputs.push_back(local_value(v));
    const ValueId output = segment.graph.add_node(node.op, node.name, std::move(inputs), node.attrs);
    segment.graph.node(segment.graph.value(output).producer).precision = node.precision;
    local[static_cast<std::size_t>(node.output)] = output;
    if (!exported[static_cast<std::size_t>(node.output)]) continue;
    segment.graph.mark_output(output);
    segment.outputs.push_back(node.output);
  }
}

}  // namespace

std::vector<bool> computes_from_constants(const Graph& graph) {
  std::vector<bool> result(graph.nodes().size(), false);
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    bool only_constants = !node.inputs.empty();
    for (const ValueId v : node.inputs) {
      const Value& value = graph.value(v);
      only_constants &= value.is_constant() ||
                        (value.producer != kNoNode && result[static_cast<std::size_t>(value.producer)]);
    }
    result[static_cast<std::size_t>(id)] = only_constants;
  }
  return result;
}

std::vector<NodeId> placement_order(const Graph& graph, const std::vector<int>& placement) {
  require(placement.size() == graph.nodes().size(),
          "a placement needs one entry per node: ", graph.nodes().size(), " nodes, ", placement.size(),
          " entries");
  const std::vector<NodeId> topological = graph.topological_order();
  for (const NodeId id : topological) {
    require(placement[static_cast<std::size_t>(id)] >= 0, "layer '", graph.node(id).name,
            "' has no placement");
  }
  const std::vector<bool> deferred = computes_from_constants(graph);
  const std::vector<NodeId> order = grouped_order(graph, placement, deferred);

  // Each deferred node goes before the earliest node that reads it, directly or through other
  // deferred nodes; those nothing reads go last.
  std::vector<std::size_t> position(graph.nodes().size(), order.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[static_cast<std::size_t>(order[i])] = i;
  const auto consumers = graph.consumers();
  for (auto it = topological.rbegin(); it != topological.rend(); ++it) {
    if (!deferred[static_cast<std::size_t>(*it)]) continue;
    std::size_t first = order.size();
    for (const NodeId reader : consumers[static_cast<std::size_t>(graph.node(*it).output)])
      first = std::min(first, position[static_cast<std::size_t>(reader)]);
    position[static_cast<std::size_t>(*it)] = first;
  }
  std::vector<std::vector<NodeId>> before(order.size() + 1);
  for (const NodeId id : topological) {
    if (deferred[static_cast<std::size_t>(id)]) before[position[static_cast<std::size_t>(id)]].push_back(id);
  }
  std::vector<NodeId> result;
  for (std::size_t i = 0; i <= order.size(); ++i) {
    result.insert(result.end(), before[i].begin(), before[i].end());
    if (i < order.size()) result.push_back(order[i]);
  }
  return result;
}

std::vector<Segment> split_graph(const Graph& graph, const std::vector<int>& placement) {
  std::vector<Segment> segments;
  std::vector<int> segment_of(graph.values().size(), -1);  // the segment computing each value
  for (const NodeId id : placement_order(graph, placement)) {
    const int where = placement[static_cast<std::size_t>(id)];
    if (segments.empty() || segments.back().placement != where) {
      segments.emplace_back();
      segments.back().placement = where;
    }
    segments.back().nodes.push_back(id);
    segment_of[static_cast<std::size_t>(graph.node(id).output)] = static_cast<int>(segments.size()) - 1;
  }
  // Values read outside the segment that computes them, and computed graph outputs, cross a boundary.
  std::vector<bool> exported(graph.values().size(), false);
  for (std::size_t s = 0; s < segments.size(); ++s) {
    for (const NodeId id : segments[s].nodes) {
      for (const ValueId v : graph.node(id).inputs) {
        const int producer = segment_of[static_cast<std::size_t>(v)];
        if (producer >= 0 && producer != static_cast<int>(s)) exported[static_cast<std::size_t>(v)] = true;
      }
    }
  }
  for (const ValueId v : graph.outputs()) {
    if (segment_of[static_cast<std::size_t>(v)] >= 0) exported[static_cast<std::size_t>(v)] = true;
  }
  for (Segment& segment : segments) build_segment_graph(graph, exported, segment);
  return segments;
}

}  // namespace kiln
