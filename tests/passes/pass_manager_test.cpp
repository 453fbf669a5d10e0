#include "passes/pass_manager.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "pass_test_util.h"

namespace kiln {
namespace {

using testing::add_activation;
using testing::add_batchnorm;
using testing::add_conv;
using testing::count_live;
using testing::expect_same_function;
using testing::node_named;

// ResNeSt's split attention (radix 2, cardinality 1) as timm's SplitAttn computes it:
// conv -> bn0 -> relu -> radix_sum -> gap -> fc1 (1x1, bias) -> bn1 -> relu -> fc2 (1x1, bias)
// -> radix_softmax, then the relu's output weighted by the softmax.
Graph split_attention() {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const std::string p = "layer1.0.conv2.";
  const ValueId conv = add_conv(graph, p + "conv", x, {.in = 4, .out = 8, .kernel = 3, .groups = 2}, 1);
  const ValueId bn0 = add_batchnorm(graph, p + "bn0", conv, 8, 10);
  const ValueId act0 = add_activation(graph, p + "act0", bn0);
  const RadixAttrs radix{2, 1};
  const ValueId summed = graph.add_node(OpKind::kRadixSum, p + "radix_sum", {act0}, radix);
  const ValueId gap = graph.add_node(OpKind::kGlobalAvgPool, p + "gap", {summed});
  const ValueId fc1 = add_conv(graph, p + "fc1", gap, {.in = 4, .out = 6, .kernel = 1, .bias = true}, 20);
  const ValueId bn1 = add_batchnorm(graph, p + "bn1", fc1, 6, 30);
  const ValueId act1 = add_activation(graph, p + "act1", bn1);
  const ValueId fc2 = add_conv(graph, p + "fc2", act1, {.in = 6, .out = 8, .kernel = 1, .bias = true}, 40);
  const ValueId attention = graph.add_node(OpKind::kRadixSoftmax, p + "rsoftmax", {fc2}, radix);
  graph.mark_output(graph.add_node(OpKind::kRadixWeightedSum, p + "weighted_sum", {act0, attention}, radix));
  return graph;
}

// A ResNet basic block: conv1 -> bn1 -> relu -> conv2 -> bn2 -> add(shortcut) -> relu.
Graph basic_block() {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 8, 8});
  const ValueId conv1 = add_conv(graph, "conv1", x, {}, 1);
  const ValueId act1 = add_activation(graph, "act1", add_batchnorm(graph, "bn1", conv1, 4, 2));
  const ValueId conv2 = add_conv(graph, "conv2", act1, {}, 3);
  const ValueId bn2 = add_batchnorm(graph, "bn2", conv2, 4, 4);
  const ValueId sum = graph.add_node(OpKind::kAdd, "add", {bn2, x}, AddAttrs{});
  graph.mark_output(add_activation(graph, "act2", sum));
  return graph;
}

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(print_graph(a), print_graph(b));
  EXPECT_EQ(a.nodes().size(), b.nodes().size());
  EXPECT_EQ(a.values().size(), b.values().size());
}

TEST(PassManager, ListsEveryPassWithItsLevel) {
  const std::string listing = list_passes();
  EXPECT_EQ(registered_passes().size(), 7u);
  for (const Pass& pass : registered_passes()) {
    EXPECT_NE(listing.find(std::string(pass.name)), std::string::npos) << pass.name;
    EXPECT_GE(pass.level, kCleanupLevel);
    EXPECT_LE(pass.level, kMaxPassLevel);
    EXPECT_NE(pass.run, nullptr);
  }
  EXPECT_NE(listing.find("fold_batchnorm        (level 2)"), std::string::npos) << listing;
}

TEST(PassManager, FoldsAndFusesSplitAttention) {
  Graph graph = split_attention();
  const Graph before = graph;
  const PassReport report = run_passes(graph);
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 0u);
  EXPECT_EQ(count_live(graph, OpKind::kActivation), 0u);
  EXPECT_EQ(graph.live_node_count(), 7u);
  EXPECT_EQ(graph.nodes().size(), 7u);  // compacted
  for (const char* conv : {"layer1.0.conv2.conv", "layer1.0.conv2.fc1"}) {
    EXPECT_EQ(node_named(graph, conv).attr<ConvAttrs>().activation, Activation::kRelu) << conv;
    EXPECT_EQ(graph.value(node_named(graph, conv).inputs[1]).name, std::string(conv) + ".weight.folded");
  }
  EXPECT_EQ(node_named(graph, "layer1.0.conv2.fc2").attr<ConvAttrs>().activation, Activation::kNone);
  EXPECT_EQ(report.change_count(), 4u);
  expect_same_function(before, graph);

  // Idempotence: a second run finds nothing and changes nothing.
  const Graph once = graph;
  EXPECT_EQ(run_passes(graph).change_count(), 0u);
  expect_same_graph(once, graph);
}

TEST(PassManager, ReportsEachChangeOfAResidualBlock) {
  Graph graph = basic_block();
  const Graph before = graph;
  const PassReport report = run_passes(graph);
  EXPECT_EQ(report.str(),
            "eliminate_identity: 0 changes\n"
            "fold_constants: 0 changes\n"
            "merge_concat_slices: 0 changes\n"
            "eliminate_dead_nodes: 0 changes\n"
            "fold_batchnorm: 2 changes\n"
            "  folded bn1 into conv1\n"
            "  folded bn2 into conv2\n"
            "fuse_conv_activation: 1 change\n"
            "  fused act1 (relu) into conv1\n"
            "fuse_add_activation: 1 change\n"
            "  fused act2 (relu) into add\n");
  EXPECT_EQ(graph.live_node_count(), 3u);
  expect_same_function(before, graph);
  EXPECT_EQ(run_passes(graph).change_count(), 0u);
}

TEST(PassManager, LevelOneRunsOnlyCleanups) {
  // The basic block plus an unused relu and an identity pool (default PoolAttrs: kernel 1, stride 1)
  // on a second graph output.
  Graph graph = basic_block();
  add_activation(graph, "unused", graph.inputs()[0]);
  graph.mark_output(graph.add_node(OpKind::kMaxPool2d, "pool", {graph.outputs()[0]}, PoolAttrs{}));
  const Graph before = graph;
  const PassReport report = run_passes(graph, {.level = 1, .disabled = {}});
  ASSERT_EQ(report.runs.size(), 4u);
  EXPECT_EQ(report.change_count(), 2u);  // the pool bypassed, the unused relu removed
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 2u);
  EXPECT_EQ(count_live(graph, OpKind::kMaxPool2d), 0u);
  EXPECT_FALSE(graph.find_node("unused").has_value());
  expect_same_function(before, graph, 1234, 0.0);
}

TEST(PassManager, LevelZeroDoesNothing) {
  Graph graph = split_attention();
  add_activation(graph, "unused", graph.inputs()[0]);  // even an unused node stays
  const Graph before = graph;
  const PassReport report = run_passes(graph, {.level = 0, .disabled = {}});
  EXPECT_TRUE(report.runs.empty());
  expect_same_graph(before, graph);
  EXPECT_EQ(graph.live_node_count(), before.live_node_count());
}

TEST(PassManager, DisabledPassLeavesItsPatternAlone) {
  // Without BN folding every relu follows a BN, not a conv, so nothing else applies either.
  Graph graph = split_attention();
  const Graph before = graph;
  const PassReport report = run_passes(graph, {.disabled = {"fold_batchnorm"}});
  EXPECT_EQ(report.runs.size(), 6u);
  EXPECT_EQ(report.change_count(), 0u);
  expect_same_graph(before, graph);

  // Disabling only the activation fusion folds the BNs and keeps the relus.
  Graph folded = split_attention();
  run_passes(folded, {.disabled = {"fuse_conv_activation"}});
  EXPECT_EQ(count_live(folded, OpKind::kBatchNorm), 0u);
  EXPECT_EQ(count_live(folded, OpKind::kActivation), 2u);
  expect_same_function(before, folded);
}

TEST(PassManager, UnknownPassNameFailsListingKnownNames) {
  Graph graph = basic_block();
  const Graph before = graph;
  try {
    run_passes(graph, {.disabled = {"fold_batchnorm", "fold_bn"}});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown pass 'fold_bn'"), std::string::npos) << message;
    for (const Pass& pass : registered_passes()) {
      EXPECT_NE(message.find(std::string(pass.name)), std::string::npos) << message;
    }
  }
  expect_same_graph(before, graph);
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 2u);
}

TEST(PassManager, LevelOutOfRangeFails) {
  Graph graph = basic_block();
  EXPECT_THROW(run_passes(graph, {.level = 3, .disabled = {}}), Error);
  EXPECT_THROW(run_passes(graph, {.level = -1, .disabled = {}}), Error);
  EXPECT_EQ(count_live(graph, OpKind::kBatchNorm), 2u);
}

}  // namespace
}  // namespace kiln
