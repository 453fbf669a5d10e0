#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "pass_test_util.h"
#include "passes/pass.h"

namespace kiln {
namespace {

using testing::add_batchnorm;
using testing::add_conv;
using testing::ConvSpec;
using testing::count_live;
using testing::expect_same_function;
using testing::node_named;

// x -> conv -> bn -> output.
Graph conv_bn(const ConvSpec& spec, float epsilon = 1e-5f) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, spec.in, 9, 9});
  const ValueId conv = add_conv(graph, "conv", x, spec, 10);
  graph.mark_output(add_batchnorm(graph, "bn", conv, spec.out, 20, epsilon));
  return graph;
}

void expect_folded(const Graph& before, Graph& graph) {
  const PassChanges changes = fold_batchnorm(graph);
  ASSERT_EQ(changes, PassChanges{"folded bn into conv"});
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 0u);
  const Node& conv = node_named(graph, "conv");
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_EQ(graph.value(conv.inputs[1]).name, "conv.weight.folded");
  EXPECT_EQ(graph.value(conv.inputs[2]).name, "conv.bias.folded");
  EXPECT_EQ(graph.outputs(), std::vector<ValueId>{conv.output});
  verify(graph);
  expect_same_function(before, graph);
  EXPECT_TRUE(fold_batchnorm(graph).empty());  // idempotent
}

TEST(FoldBatchnorm, FoldsConvWithoutBias) {
  Graph graph = conv_bn({.in = 3, .out = 6, .kernel = 3});
  const Graph before = graph;
  expect_folded(before, graph);
}

TEST(FoldBatchnorm, FoldsConvWithBiasAndLargeEpsilon) {
  Graph graph = conv_bn({.in = 4, .out = 8, .kernel = 1, .bias = true}, 1e-3f);
  const Graph before = graph;
  expect_folded(before, graph);
}

TEST(FoldBatchnorm, FoldsGroupedAndDepthwiseConvs) {
  for (const std::int64_t groups : {2, 8}) {
    Graph graph =
        conv_bn({.in = 8, .out = 8, .kernel = 3, .stride = 2, .groups = groups, .bias = groups == 2});
    const Graph before = graph;
    expect_folded(before, graph);
  }
}

TEST(FoldBatchnorm, LeavesTheOriginalWeightsUntouched) {
  // A copy of the graph shares constant storage; the fold must write new tensors.
  Graph graph = conv_bn({.in = 3, .out = 5});
  const Graph before = graph;
  const Tensor weight = graph.value(node_named(graph, "conv").inputs[1]).constant.clone();
  fold_batchnorm(graph);
  const auto original = before.value(node_named(before, "conv").inputs[1]).constant.f32();
  EXPECT_TRUE(std::equal(original.begin(), original.end(), weight.f32().begin()));
}

TEST(FoldBatchnorm, LeavesASharedWeightToItsOtherReader) {
  // Two convs read one weight constant; only the first feeds a BN. The fold gives that conv new
  // constants, so the second must still read the original weight.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId bn = add_batchnorm(graph, "bn", conv, 4, 2);
  const ValueId shared_weight = node_named(graph, "conv").inputs[1];
  ConvAttrs attrs;
  attrs.kernel = {3, 3};
  attrs.padding = {1, 1, 1, 1};
  const ValueId twin = graph.add_node(OpKind::kConv2d, "twin", {x, shared_weight}, attrs);
  graph.mark_output(graph.add_node(OpKind::kAdd, "add", {bn, twin}, AddAttrs{}));
  const Graph before = graph;
  EXPECT_EQ(fold_batchnorm(graph).size(), 1u);
  EXPECT_EQ(node_named(graph, "twin").inputs[1], shared_weight);
  EXPECT_NE(node_named(graph, "conv").inputs[1], shared_weight);
  expect_same_function(before, graph);
}

TEST(FoldBatchnorm, KeepsConvWhoseOutputHasAnotherReader) {
  // conv feeds both the BN and a relu: folding would change what the relu sees.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId bn = add_batchnorm(graph, "bn", conv, 4, 2);
  const ValueId relu = testing::add_activation(graph, "relu", conv);
  graph.mark_output(graph.add_node(OpKind::kAdd, "add", {bn, relu}, AddAttrs{}));
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 1u);
  EXPECT_EQ(node_named(graph, "conv").inputs.size(), 2u);
}

TEST(FoldBatchnorm, KeepsConvWhoseOutputIsAGraphOutput) {
  Graph graph = conv_bn({});
  graph.mark_output(node_named(graph, "conv").output);
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 1u);
}

TEST(FoldBatchnorm, KeepsBatchnormOnAGraphInputOrANonConv) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId bn0 = add_batchnorm(graph, "bn0", x, 4, 1);
  const ValueId relu = testing::add_activation(graph, "relu", bn0);
  graph.mark_output(add_batchnorm(graph, "bn1", relu, 4, 2));
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 2u);
}

TEST(FoldBatchnorm, KeepsConvWithFusedActivation) {
  // relu(conv) -> bn: the affine map cannot move through the relu.
  Graph graph = conv_bn({});
  graph.node(*graph.find_node("conv")).attr<ConvAttrs>().activation = Activation::kRelu;
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 1u);
}

TEST(FoldBatchnorm, KeepsBatchnormWhoseChannelsDoNotMatch) {
  // Shape inference rejects such a graph; the pass must not rely on that and read out of bounds.
  Graph graph = conv_bn({.in = 4, .out = 4});
  const ValueId gamma = node_named(graph, "bn").inputs[1];
  graph.value(gamma).constant = testing::random_tensor({3}, 5, 0.5f, 1.5f);
  graph.value(gamma).shape = {3};
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 1u);
}

TEST(FoldBatchnorm, KeepsBatchnormWithNonPositiveVariance) {
  Graph graph = conv_bn({.in = 4, .out = 4});
  const ValueId var = node_named(graph, "bn").inputs[4];
  graph.value(var).constant = Tensor::from_f32({4}, std::vector<float>{1.0f, -1.0f, 1.0f, 1.0f});
  EXPECT_TRUE(fold_batchnorm(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 1u);
}

TEST(FoldBatchnorm, FoldsTwoBatchnormsInARowWithUniqueNames) {
  // conv -> bn -> bn2: the second fold sees the first's constants and must not reuse their names.
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId bn = add_batchnorm(graph, "bn", conv, 4, 2);
  graph.mark_output(add_batchnorm(graph, "bn2", bn, 4, 7));
  const Graph before = graph;
  EXPECT_EQ(fold_batchnorm(graph), (PassChanges{"folded bn into conv", "folded bn2 into conv"}));
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 0u);
  const Node& folded = node_named(graph, "conv");
  EXPECT_EQ(graph.value(folded.inputs[1]).name, "conv.weight.folded.2");
  verify(graph);
  expect_same_function(before, graph);
}

}  // namespace
}  // namespace kiln
