#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "pass_test_util.h"
#include "passes/pass.h"

namespace kiln {
namespace {

using testing::add_activation;
using testing::add_conv;
using testing::count_live;
using testing::expect_same_function;
using testing::node_named;

// x -> conv -> add(conv, x) -> act -> conv2 -> output: a residual block's tail.
Graph residual(Activation activation) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {.bias = true}, 1);
  const ValueId sum = graph.add_node(OpKind::kAdd, "add", {conv, x}, AddAttrs{});
  const ValueId act = add_activation(graph, "act", sum, activation);
  graph.mark_output(add_conv(graph, "conv2", act, {}, 3));
  return graph;
}

TEST(FuseAddActivation, FusesResidualRelu) {
  Graph graph = residual(Activation::kRelu);
  const Graph before = graph;
  EXPECT_EQ(fuse_add_activation(graph), PassChanges{"fused act (relu) into add"});
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 0u);
  const Node& add = node_named(graph, "add");
  EXPECT_EQ(add.attr<AddAttrs>().activation, Activation::kRelu);
  EXPECT_EQ(node_named(graph, "conv2").inputs[0], add.output);
  verify(graph);
  expect_same_function(before, graph, 5, 0.0);      // relu of a rounded sum is the rounded relu: exact
  EXPECT_TRUE(fuse_add_activation(graph).empty());  // idempotent
}

TEST(FuseAddActivation, LeavesOtherActivations) {
  Graph graph = residual(Activation::kSilu);
  EXPECT_TRUE(fuse_add_activation(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

TEST(FuseAddActivation, KeepsAddWithAnotherReaderOrAsGraphOutput) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId sum = graph.add_node(OpKind::kAdd, "add", {x, x}, AddAttrs{});
  const ValueId relu = add_activation(graph, "relu", sum);
  graph.mark_output(graph.add_node(OpKind::kAdd, "add2", {sum, relu}, AddAttrs{}));
  EXPECT_TRUE(fuse_add_activation(graph).empty());

  Graph output_graph = residual(Activation::kRelu);
  output_graph.mark_output(node_named(output_graph, "add").output);
  EXPECT_TRUE(fuse_add_activation(output_graph).empty());
  EXPECT_EQ(count_live(output_graph, OpKind::kActivation), 1u);
}

TEST(FuseAddActivation, DoesNotStackASecondActivation) {
  Graph graph = residual(Activation::kRelu);
  graph.node(*graph.find_node("add")).attr<AddAttrs>().activation = Activation::kRelu;
  EXPECT_TRUE(fuse_add_activation(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

}  // namespace
}  // namespace kiln
