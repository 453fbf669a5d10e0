// Small queries on built graphs shared by the family tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln::testing {

// The message of the kiln::Error `action` throws; fails the test when it throws nothing.
template <typename Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

inline std::size_t count_ops(const Graph& graph, OpKind op) {
  std::size_t count = 0;
  for (const Node& node : graph.nodes()) count += (!node.dead && node.op == op) ? 1 : 0;
  return count;
}

inline bool has_node(const Graph& graph, std::string_view name) { return graph.find_node(name).has_value(); }

// The node `name`; fails the test (and throws) when there is none.
inline const Node& node_named(const Graph& graph, std::string_view name) {
  const auto id = graph.find_node(name);
  if (!id) fail("test: no node named '", name, "'");
  return graph.node(*id);
}

inline const Shape& output_shape(const Graph& graph, std::string_view name) {
  return graph.value(node_named(graph, name).output).shape;
}

}  // namespace kiln::testing
