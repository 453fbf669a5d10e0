#include <gtest/gtest.h>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/printer.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace kiln {
namespace {

Tensor filled(Shape shape, float start) {
  Tensor tensor(DType::kF32, std::move(shape));
  float value = start;
  for (float& element : tensor.mutable_f32()) element = (value += 0.25f);
  return tensor;
}

ConvAttrs conv3x3(std::int64_t stride) {
  ConvAttrs attrs;
  attrs.kernel = {3, 3};
  attrs.stride = {stride, stride};
  attrs.padding = {1, 1, 1, 1};
  return attrs;
}

// x -> conv(s2) -> bn -> relu -> maxpool -> add(with itself) -> gap -> flatten -> linear
Graph small_graph() {
  Graph graph;
  const ValueId x = graph.add_input("input", {-1, 3, 16, 16});
  const ValueId w = graph.add_constant("conv.weight", filled({8, 3, 3, 3}, 0.f));
  const ValueId conv = graph.add_node(OpKind::kConv2d, "conv", {x, w}, conv3x3(2));
  std::vector<ValueId> bn_inputs = {conv};
  for (const char* part : {"weight", "bias", "running_mean", "running_var"}) {
    bn_inputs.push_back(graph.add_constant(std::string("bn.") + part, filled({8}, 1.f)));
  }
  const ValueId bn = graph.add_node(OpKind::kBatchNorm, "bn", bn_inputs, BatchNormAttrs{});
  const ValueId relu = graph.add_node(OpKind::kActivation, "relu", {bn}, ActivationAttrs{});
  PoolAttrs pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  pool.padding = {1, 1, 1, 1};
  const ValueId pooled = graph.add_node(OpKind::kMaxPool2d, "pool", {relu}, pool);
  const ValueId sum = graph.add_node(OpKind::kAdd, "add", {pooled, pooled}, AddAttrs{});
  const ValueId gap = graph.add_node(OpKind::kGlobalAvgPool, "gap", {sum});
  const ValueId flat = graph.add_node(OpKind::kFlatten, "flatten", {gap});
  const ValueId fc_w = graph.add_constant("fc.weight", filled({5, 8}, 2.f));
  const ValueId fc_b = graph.add_constant("fc.bias", filled({5}, 3.f));
  graph.mark_output(graph.add_node(OpKind::kLinear, "fc", {flat, fc_w, fc_b}));
  return graph;
}

TEST(Graph, InfersShapesWithDynamicBatch) {
  const Graph graph = small_graph();
  verify(graph);
  EXPECT_EQ(graph.value(graph.node(*graph.find_node("conv")).output).shape, (Shape{-1, 8, 8, 8}));
  EXPECT_EQ(graph.value(graph.node(*graph.find_node("pool")).output).shape, (Shape{-1, 8, 4, 4}));
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{-1, 5}));
  const auto shapes = infer_shapes(graph, {{3, 3, 16, 16}});
  EXPECT_EQ(shapes[static_cast<std::size_t>(graph.outputs()[0])], (Shape{3, 5}));
  EXPECT_THROW(infer_shapes(graph, {{3, 4, 16, 16}}), Error);
  EXPECT_EQ(graph.parameter_count(), 8u * 27 + 4 * 8 + 40 + 5);
}

TEST(Graph, CeilModeDropsWindowStartingInPadding) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 4, 7, 7});
  PoolAttrs attrs;
  attrs.kernel = {2, 2};
  attrs.stride = {2, 2};
  attrs.ceil_mode = true;
  attrs.count_include_pad = false;
  EXPECT_EQ(graph.value(graph.add_node(OpKind::kAvgPool2d, "ceil", {x}, attrs)).shape, (Shape{1, 4, 4, 4}));
  attrs.ceil_mode = false;
  EXPECT_EQ(graph.value(graph.add_node(OpKind::kAvgPool2d, "floor", {x}, attrs)).shape, (Shape{1, 4, 3, 3}));
  // 3x3 stride 2 pad 1 ceil on 8: floor((8+2-3)/2)+1 = 4, ceil gives 5 but that window starts at 8 >= 8+1? no:
  // (5-1)*2 = 8 < 8 + 1, so PyTorch keeps 5.
  attrs.kernel = {3, 3};
  attrs.padding = {1, 1, 1, 1};
  attrs.ceil_mode = true;
  const ValueId y = graph.add_input("y", {1, 1, 8, 8});
  EXPECT_EQ(graph.value(graph.add_node(OpKind::kAvgPool2d, "ceil3", {y}, attrs)).shape, (Shape{1, 1, 5, 5}));
}

TEST(Graph, RejectsMismatchedInputsNamingTheLayer) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 3, 8, 8});
  const ValueId w = graph.add_constant("bad.weight", filled({8, 4, 3, 3}, 0.f));
  try {
    graph.add_node(OpKind::kConv2d, "layer1.0.conv1", {x, w}, conv3x3(1));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("layer1.0.conv1"), std::string::npos) << error.what();
  }
  EXPECT_THROW(graph.add_node(OpKind::kConv2d, "no_attrs", {x, w}), Error);
  EXPECT_THROW(graph.add_node(OpKind::kAdd, "add", {x}, AddAttrs{}), Error);
}

TEST(Graph, VerifierRejectsNonConstantWeight) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 3, 8, 8});
  const ValueId w = graph.add_input("w", {8, 3, 3, 3});
  graph.mark_output(graph.add_node(OpKind::kConv2d, "conv", {x, w}, conv3x3(1)));
  EXPECT_THROW(verify(graph), Error);
}

TEST(Graph, VerifierRejectsEditedShapes) {
  Graph graph = small_graph();
  graph.value(graph.node(*graph.find_node("relu")).output).shape = {1, 8, 9, 9};
  EXPECT_THROW(verify(graph), Error);
}

TEST(Graph, DetectsCycles) {
  Graph graph = small_graph();
  // Make the first conv read the add's output: a cycle.
  Node& conv = graph.node(*graph.find_node("conv"));
  const ValueId add_out = graph.node(*graph.find_node("add")).output;
  conv.inputs[0] = add_out;
  EXPECT_THROW(graph.topological_order(), Error);
}

TEST(Graph, RemovingANodeAndCompacting) {
  Graph graph = small_graph();
  // Bypass the relu: its readers read the batch norm directly.
  const NodeId relu = *graph.find_node("relu");
  graph.replace_uses(graph.node(relu).output, graph.node(*graph.find_node("bn")).output);
  graph.node(relu).dead = true;
  const std::size_t before = graph.values().size();
  graph.compact();
  verify(graph);
  EXPECT_FALSE(graph.find_node("relu").has_value());
  EXPECT_EQ(graph.values().size(), before - 1);
  EXPECT_EQ(graph.live_node_count(), 7u);
  const auto order = graph.topological_order();
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], static_cast<NodeId>(i));
}

TEST(Graph, PrinterShowsEveryLayer) {
  const Graph graph = small_graph();
  const std::string text = print_graph(graph);
  for (const char* name :
       {"conv2d conv(", "batch_norm bn", "max_pool2d pool", "linear fc", "fc.weight[5, 8]",
        "{kernel=3x3 stride=2x2 padding=1,1,1,1 dilation=1x1 groups=1 activation=none}", "{epsilon=1e-05}",
        "{activation=relu}", "ceil_mode=false count_include_pad=true}", "flatten flatten(%", "-> [-1, 5]"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << "\n" << text;
  }
}

TEST(Graph, OpKindNamesRoundTrip) {
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto op = static_cast<OpKind>(i);
    EXPECT_EQ(op_kind_from_name(op_kind_name(op)), op);
  }
  EXPECT_FALSE(op_kind_from_name("nonsense").has_value());
  EXPECT_EQ(precision_from_name("fp16"), Precision::kF16);
}

}  // namespace
}  // namespace kiln
