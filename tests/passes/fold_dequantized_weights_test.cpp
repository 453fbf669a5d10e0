#include "passes/fold_dequantized_weights.h"

#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "pass_test_util.h"

namespace kiln {
namespace {

using testing::expect_same_function;

// x -> conv(x, dequantize(codes, scales)) -> y, with codes on the E4M3 grid and one scale per output channel.
Graph fp8_weights_graph(bool codes_constant = true) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 2, 3, 3});
  const std::vector<float> grid = {0.5f, -1.5f, 2.0f, 0.25f, -3.0f, 1.0f};
  Tensor codes = Tensor::from_f32({3, 2, 1, 1}, grid).to(DType::kF8E4M3);
  const ValueId codes_value = codes_constant ? graph.add_constant("w.codes", std::move(codes))
                                             : graph.add_input("w.codes", {3, 2, 1, 1});
  const ValueId scales =
      graph.add_constant("w.scales", Tensor::from_f32({3}, std::vector<float>{0.5f, 2.0f, 0.125f}));
  const ValueId w = graph.add_node(OpKind::kDequantize, "w.dequantize", {codes_value, scales});
  graph.mark_output(graph.add_node(OpKind::kConv2d, "conv", {x, w}, ConvAttrs{}));
  return graph;
}

TEST(FoldDequantizedWeights, ConstantCodesBecomeF32Weights) {
  Graph graph = fp8_weights_graph();
  const Graph before = graph;
  const ValueId w = testing::node_named(graph, "conv").inputs[1];
  EXPECT_EQ(fold_dequantized_weights(graph),
            (PassChanges{"folded w.dequantize (dequantize) into f32 weights [3, 2, 1, 1]"}));
  const Value& folded = graph.value(w);
  ASSERT_TRUE(folded.is_constant());
  EXPECT_EQ(folded.producer, kNoNode);
  EXPECT_EQ(folded.constant.dtype(), DType::kF32);
  // Codes times their output channel's scale.
  const std::vector<float> expected = {0.25f, -0.75f, 4.0f, 0.5f, -0.375f, 0.125f};
  const auto values = folded.constant.f32();
  ASSERT_EQ(values.size(), expected.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], expected[i]) << i;
  graph.compact();
  verify(graph);
  EXPECT_EQ(graph.live_node_count(), 1u);
  expect_same_function(before, graph, 3, 0.0);
  EXPECT_TRUE(fold_dequantized_weights(graph).empty());  // idempotent
}

TEST(FoldDequantizedWeights, ComputedCodesStay) {
  Graph graph = fp8_weights_graph(false);
  EXPECT_TRUE(fold_dequantized_weights(graph).empty());
  EXPECT_EQ(graph.live_node_count(), 2u);
}

}  // namespace
}  // namespace kiln
