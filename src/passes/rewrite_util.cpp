#include "passes/rewrite_util.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"

namespace kiln::passes {

bool is_graph_output(const Graph& graph, ValueId value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

std::optional<NodeId> sole_reader(const Graph& graph, const Consumers& consumers, ValueId value) {
  const auto& readers = consumers.at(static_cast<std::size_t>(value));
  if (readers.size() != 1 || is_graph_output(graph, value)) return std::nullopt;
  return readers.front();
}

void bypass(Graph& graph, NodeId node, ValueId replacement) {
  Node& bypassed = graph.node(node);
  bypassed.dead = true;
  graph.replace_uses(bypassed.output, replacement);
}

std::string fresh_value_name(const Graph& graph, const std::string& base) {
  std::unordered_set<std::string_view> taken;
  for (const Value& value : graph.values()) taken.insert(value.name);
  if (!taken.contains(base)) return base;
  for (int suffix = 2;; ++suffix) {
    std::string candidate = cat(base, ".", suffix);
    if (!taken.contains(candidate)) return candidate;
  }
}

}  // namespace kiln::passes
