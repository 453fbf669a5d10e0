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

PoolAttrs window(std::int64_t kernel, std::int64_t stride) {
  PoolAttrs attrs;
  attrs.kernel = {kernel, kernel};
  attrs.stride = {stride, stride};
  return attrs;
}

TEST(EliminateIdentity, BypassesEveryIdentityKind) {
  // conv -> maxpool k1 -> avgpool k1 (ceil, exclude pad) -> radix_sum r1 -> act none -> gap -> flatten
  // -> flatten (of [N, C]) -> linear.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId max = graph.add_node(OpKind::kMaxPool2d, "max", {conv}, window(1, 1));
  PoolAttrs avg_attrs = window(1, 1);
  avg_attrs.ceil_mode = true;
  avg_attrs.count_include_pad = false;
  const ValueId avg = graph.add_node(OpKind::kAvgPool2d, "avg", {max}, avg_attrs);
  const ValueId radix = graph.add_node(OpKind::kRadixSum, "radix", {avg}, RadixAttrs{1, 1});
  const ValueId none = add_activation(graph, "none", radix, Activation::kNone);
  const ValueId gap = graph.add_node(OpKind::kGlobalAvgPool, "gap", {none});
  const ValueId flat = graph.add_node(OpKind::kFlatten, "flatten", {gap});
  const ValueId flat2 = graph.add_node(OpKind::kFlatten, "flatten2", {flat});
  const ValueId fc_w = graph.add_constant("fc.weight", testing::random_tensor({3, 4}, 9));
  graph.mark_output(graph.add_node(OpKind::kLinear, "fc", {flat2, fc_w}));
  const Graph before = graph;

  EXPECT_EQ(eliminate_identity(graph).size(), 5u);
  EXPECT_EQ(graph.live_node_count(), 4u);  // conv, gap, flatten, fc
  EXPECT_EQ(count_live(graph, OpKind::kMaxPool2d) + count_live(graph, OpKind::kAvgPool2d) +
                count_live(graph, OpKind::kRadixSum) + count_live(graph, OpKind::kActivation),
            0u);
  EXPECT_EQ(graph.node(*graph.find_node("gap")).inputs[0], conv);
  EXPECT_FALSE(graph.find_node("flatten2").has_value());
  verify(graph);
  expect_same_function(before, graph, 3, 0.0);
  EXPECT_TRUE(eliminate_identity(graph).empty());  // idempotent
}

TEST(EliminateIdentity, KeepsNodesThatChangeTheirInput) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId strided = graph.add_node(OpKind::kAvgPool2d, "strided", {conv}, window(1, 2));
  const ValueId pooled = graph.add_node(OpKind::kMaxPool2d, "pooled", {strided}, window(2, 1));
  const ValueId radix = graph.add_node(OpKind::kRadixSum, "radix", {pooled}, RadixAttrs{2, 1});
  graph.mark_output(graph.add_node(OpKind::kFlatten, "flatten", {radix}));
  EXPECT_TRUE(eliminate_identity(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 5u);
}

TEST(EliminateIdentity, KeepsOperatorsWhoseRowHasNoIdentityRule) {
  // Each returns its input here and has its shape, but op_info.h gives them no rule: they stay.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 1, 1});
  const ValueId conv = add_conv(graph, "conv", x, {.kernel = 1}, 1);
  const ValueId gap = graph.add_node(OpKind::kGlobalAvgPool, "gap", {conv});
  const ValueId joined = graph.add_node(OpKind::kConcat, "concat", {gap}, ConcatAttrs{1});
  const ValueId sliced = graph.add_node(OpKind::kChannelSlice, "slice", {joined}, SliceAttrs{1, 0, 4});
  graph.mark_output(graph.add_node(OpKind::kUpsample, "upsample", {sliced}, UpsampleAttrs{1}));
  EXPECT_TRUE(eliminate_identity(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 5u);
}

TEST(EliminateIdentity, KeepsIdentityBetweenGraphInputAndOutput) {
  // Bypassing it would make a graph input a graph output, with no node producing it.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  graph.mark_output(graph.add_node(OpKind::kMaxPool2d, "pool", {x}, window(1, 1)));
  EXPECT_TRUE(eliminate_identity(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 1u);
}

}  // namespace
}  // namespace kiln
