#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "pass_test_util.h"
#include "passes/pass.h"

namespace kiln {
namespace {

using testing::add_activation;
using testing::add_conv;
using testing::expect_same_function;

TEST(EliminateDeadNodes, RemovesAnUnusedBranchInOneRun) {
  // x -> conv -> relu -> output, plus conv -> side -> add(side, side) read by nobody.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  graph.mark_output(add_activation(graph, "relu", conv));
  const ValueId side = add_conv(graph, "side", conv, {}, 2);
  graph.add_node(OpKind::kAdd, "side_add", {side, side}, AddAttrs{});
  const Graph before = graph;

  EXPECT_EQ(eliminate_dead_nodes(graph),
            (PassChanges{"removed side_add (output unused)", "removed side (output unused)"}));
  EXPECT_EQ(graph.live_node_count(), 2u);
  EXPECT_FALSE(graph.find_node("side").has_value());
  graph.compact();
  verify(graph);
  EXPECT_EQ(graph.nodes().size(), 2u);
  expect_same_function(before, graph, 3, 0.0);
  EXPECT_TRUE(eliminate_dead_nodes(graph).empty());  // idempotent
}

TEST(EliminateDeadNodes, KeepsGraphOutputsAndTheirProducers) {
  // Two outputs, one of them an intermediate that the other path also reads.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId relu = add_activation(graph, "relu", conv);
  graph.mark_output(relu);
  graph.mark_output(add_activation(graph, "sigmoid", conv, Activation::kSigmoid));
  EXPECT_TRUE(eliminate_dead_nodes(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 3u);
}

}  // namespace
}  // namespace kiln
