// A backend for partitioning tests: another backend that refuses the nodes a predicate picks.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "backends/backend.h"

namespace kiln::testing {

using Refuses = std::function<bool(const Graph&, const Node&)>;

// Runs graphs on another backend (the reference by default) but refuses the nodes `refuses` picks; compiling
// a graph with such a node fails, so a test passes only if the partition kept them off this backend.
class PickyBackend final : public Backend {
 public:
  explicit PickyBackend(Refuses refuses, std::string_view runs_on = "cpu-reference")
      : refuses_(std::move(refuses)), inner_(make_backend(runs_on)) {}
  std::string_view name() const override { return "picky"; }
  bool supports(const Graph& graph, const Node& node) const override { return !refuses_(graph, node); }
  std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const override {
    for (const NodeId id : graph.topological_order())
      require(supports(graph, graph.node(id)), "picky backend: given layer '", graph.node(id).name, "'");
    compiled_node_counts.push_back(graph.live_node_count());
    return inner_->compile(graph, options);
  }
  mutable std::vector<std::size_t> compiled_node_counts;

 private:
  Refuses refuses_;
  std::unique_ptr<Backend> inner_;
};

inline Refuses refuse_op(OpKind op) {
  return [op](const Graph&, const Node& node) { return node.op == op; };
}

}  // namespace kiln::testing
