// The fusion matcher both compiled backends plan their fusions with: a producer is fusable into its
// reader only when it has the operator asked for, the reader is the value's only reader and the value is
// no graph output.
#include "backends/common/fusion_match.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

using backends::fusable_producer;

struct Chain {
  Graph graph;
  ValueId x, relu, pooled;
  NodeId relu_node, pool_node;
};

// x -> relu -> global pool.
Chain chain() {
  Chain c;
  c.x = c.graph.add_input("x", {1, 4, 2, 2});
  c.relu = c.graph.add_node(OpKind::kActivation, "relu", {c.x}, ActivationAttrs{Activation::kRelu});
  c.pooled = c.graph.add_node(OpKind::kGlobalAvgPool, "pool", {c.relu});
  c.relu_node = c.graph.value(c.relu).producer;
  c.pool_node = c.graph.value(c.pooled).producer;
  c.graph.mark_output(c.pooled);
  return c;
}

TEST(FusionMatchTest, TheSoleReaderGetsTheProducer) {
  const Chain c = chain();
  EXPECT_EQ(fusable_producer(c.graph, c.graph.consumers(), c.relu, c.pool_node, OpKind::kActivation),
            c.relu_node);
}

TEST(FusionMatchTest, AnotherOperatorOrAGraphInputIsNoMatch) {
  const Chain c = chain();
  const auto consumers = c.graph.consumers();
  EXPECT_EQ(fusable_producer(c.graph, consumers, c.relu, c.pool_node, OpKind::kConv2d), kNoNode);
  EXPECT_EQ(fusable_producer(c.graph, consumers, c.x, c.relu_node, OpKind::kActivation), kNoNode);
}

TEST(FusionMatchTest, ASecondReaderOrAGraphOutputKeepsTheValue) {
  Chain shared = chain();
  shared.graph.mark_output(shared.graph.add_node(OpKind::kActivation, "sigmoid", {shared.relu},
                                                 ActivationAttrs{Activation::kSigmoid}));
  EXPECT_EQ(fusable_producer(shared.graph, shared.graph.consumers(), shared.relu, shared.pool_node,
                             OpKind::kActivation),
            kNoNode);
  Chain seen = chain();
  seen.graph.mark_output(seen.relu);
  EXPECT_EQ(
      fusable_producer(seen.graph, seen.graph.consumers(), seen.relu, seen.pool_node, OpKind::kActivation),
      kNoNode);
}

TEST(FusionMatchTest, OnlyTheReaderAsked) {
  const Chain c = chain();
  EXPECT_EQ(fusable_producer(c.graph, c.graph.consumers(), c.relu, c.relu_node, OpKind::kActivation),
            kNoNode);
}

}  // namespace
}  // namespace kiln
