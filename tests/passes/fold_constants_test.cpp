#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/verifier.h"
#include "pass_test_util.h"
#include "passes/pass.h"

namespace kiln {
namespace {

using testing::add_activation;
using testing::expect_same_function;

TEST(FoldConstants, FoldsAChainOfConstantNodes) {
  // bias = sigmoid(relu(c)) is the same on every run; y = x + bias stays.
  Graph graph;
  const ValueId x = graph.add_input("x", {2, 3, 4, 4});
  const ValueId c = graph.add_constant("c", testing::random_tensor({2, 3, 4, 4}, 11));
  const ValueId relu = add_activation(graph, "relu", c);
  const ValueId bias = add_activation(graph, "bias", relu, Activation::kSigmoid);
  graph.mark_output(graph.add_node(OpKind::kAdd, "add", {x, bias}, AddAttrs{}));
  const Graph before = graph;

  EXPECT_EQ(fold_constants(graph), (PassChanges{"folded relu (activation) into a constant [2, 3, 4, 4]",
                                                "folded bias (activation) into a constant [2, 3, 4, 4]"}));
  EXPECT_EQ(graph.live_node_count(), 1u);
  const Value& folded = graph.value(bias);
  ASSERT_TRUE(folded.is_constant());
  EXPECT_EQ(folded.name, "bias");
  EXPECT_EQ(folded.producer, kNoNode);
  // sigmoid(relu(v)) element by element, the kernels' double evaluation rounded once.
  const auto source = graph.value(c).constant.f32();
  const auto values = folded.constant.f32();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float r = std::max(0.0f, source[i]);
    EXPECT_EQ(values[i], static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(r))))) << i;
  }
  graph.compact();
  verify(graph);
  expect_same_function(before, graph, 3, 0.0);
  EXPECT_TRUE(fold_constants(graph).empty());  // idempotent
}

TEST(FoldConstants, FoldsAConstantGraphOutput) {
  Graph graph;
  const ValueId x = graph.add_input("x", {2, 3});
  graph.mark_output(add_activation(graph, "relu", x));
  const ValueId c = graph.add_constant("c", testing::random_tensor({2, 3}, 4));
  graph.mark_output(add_activation(graph, "const_relu", c));
  const Graph before = graph;
  EXPECT_EQ(fold_constants(graph).size(), 1u);
  EXPECT_TRUE(graph.value(graph.outputs()[1]).is_constant());
  graph.compact();
  verify(graph);
  expect_same_function(before, graph, 3, 0.0);
}

TEST(FoldConstants, KeepsNodesReadingAnyNonConstant) {
  Graph graph;
  const ValueId x = graph.add_input("x", {2, 3, 4, 4});
  const ValueId c = graph.add_constant("c", testing::random_tensor({2, 3, 4, 4}, 11));
  graph.mark_output(graph.add_node(OpKind::kAdd, "add", {x, c}, AddAttrs{}));
  EXPECT_TRUE(fold_constants(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 1u);
}

}  // namespace
}  // namespace kiln
