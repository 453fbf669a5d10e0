#include <gtest/gtest.h>

#include "core/error.h"
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

// x -> conv -> act -> conv2 -> output.
Graph conv_act_conv(Activation activation) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {.bias = true}, 1);
  const ValueId act = add_activation(graph, "act", conv, activation);
  graph.mark_output(add_conv(graph, "conv2", act, {}, 3));
  return graph;
}

TEST(FuseConvActivation, FusesReluSiluAndSigmoid) {
  for (const Activation activation : {Activation::kRelu, Activation::kSilu, Activation::kSigmoid}) {
    SCOPED_TRACE(std::string(activation_name(activation)));
    Graph graph = conv_act_conv(activation);
    const Graph before = graph;
    EXPECT_EQ(fuse_conv_activation(graph),
              PassChanges{cat("fused act (", activation_name(activation), ") into conv")});
    EXPECT_EQ(count_live(graph, OpKind::kActivation), 0u);
    const Node& conv = node_named(graph, "conv");
    EXPECT_EQ(conv.attr<ConvAttrs>().activation, activation);
    EXPECT_EQ(node_named(graph, "conv2").inputs[0], conv.output);  // took over the activation's reader
    verify(graph);
    // relu commutes with rounding and is exact; silu and sigmoid are now applied before the
    // conv's single rounding instead of after it.
    expect_same_function(before, graph, 7,
                         activation == Activation::kRelu ? 0.0 : testing::kRewriteTolerance);
    EXPECT_TRUE(fuse_conv_activation(graph).empty());  // idempotent
  }
}

TEST(FuseConvActivation, FusedConvTakesOverAGraphOutput) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  graph.mark_output(add_activation(graph, "relu", conv));
  const Graph before = graph;
  EXPECT_EQ(fuse_conv_activation(graph).size(), 1u);
  EXPECT_EQ(graph.outputs(), std::vector<ValueId>{conv});
  EXPECT_EQ(graph.value(conv).name, "conv");
  expect_same_function(before, graph, 7, 0.0);
}

TEST(FuseConvActivation, KeepsConvWithAnotherReader) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv = add_conv(graph, "conv", x, {}, 1);
  const ValueId relu = add_activation(graph, "relu", conv);
  graph.mark_output(graph.add_node(OpKind::kAdd, "add", {conv, relu}, AddAttrs{}));
  EXPECT_TRUE(fuse_conv_activation(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

TEST(FuseConvActivation, KeepsConvWhoseOutputIsAGraphOutput) {
  Graph graph = conv_act_conv(Activation::kRelu);
  graph.mark_output(node_named(graph, "conv").output);
  EXPECT_TRUE(fuse_conv_activation(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

TEST(FuseConvActivation, DoesNotStackASecondActivation) {
  Graph graph = conv_act_conv(Activation::kSigmoid);
  graph.node(*graph.find_node("conv")).attr<ConvAttrs>().activation = Activation::kRelu;
  EXPECT_TRUE(fuse_conv_activation(graph).empty());
  EXPECT_EQ(node_named(graph, "conv").attr<ConvAttrs>().activation, Activation::kRelu);
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

TEST(FuseConvActivation, IgnoresActivationNone) {
  // A 'none' activation is eliminate_identity's; fusing it would change nothing yet report a change.
  Graph graph = conv_act_conv(Activation::kNone);
  EXPECT_TRUE(fuse_conv_activation(graph).empty());
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 1u);
}

TEST(FuseConvActivation, FusesSiluOnlyAtTheSamePrecision) {
  Graph graph = conv_act_conv(Activation::kSilu);
  graph.node(*graph.find_node("conv")).precision = Precision::kF16;
  EXPECT_TRUE(fuse_conv_activation(graph).empty());
  graph.node(*graph.find_node("act")).precision = Precision::kF16;
  EXPECT_EQ(fuse_conv_activation(graph).size(), 1u);

  // relu is exact at any precision, so a precision mismatch does not block it.
  Graph relu_graph = conv_act_conv(Activation::kRelu);
  relu_graph.node(*relu_graph.find_node("conv")).precision = Precision::kF16;
  EXPECT_EQ(fuse_conv_activation(relu_graph).size(), 1u);
}

}  // namespace
}  // namespace kiln
