// int8 on the cpu backend (oneDNN's int8 convolutions) against cpu-reference's exact int8 simulation, on
// small graphs rewritten as `kiln build --precision int8` rewrites them.
//
// Both compute the same integer sums of code products, from the same codes: the quantize points and the
// weight codes are the plan's. What differs is f32 rounding after the sum: oneDNN multiplies the s32
// accumulator by (input scale x weight scale) rounded to f32 and adds the bias divided by that scale
// before it, where the simulation dequantizes in f64 and adds the bias after, a few f32 ulps (1e-7
// relative) per layer. A later quantize point turns such a difference into a whole code step only where a
// value sits within those ulps of a rounding tie, a rare element whose step (amax / 127) is a small part of
// the tensor's norm. 1e-4 is ten times the largest difference measured on these graphs (docs/ACCURACY.md)
// and far under what a wrong scale, layout or code (O(1e-2) and more) gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "quant/fake_quant.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "reference/executor.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::relative_difference;
using testing::run_on;
using testing::SmallGraph;

constexpr double kInt8BackendTolerance = 1e-4;

// Every convolution in int8, each input's scale its amax on `input` over 127 (the max calibrator), the
// rest fp32; with `residuals`, the residual stream held in int8 codes (quantize_residuals()).
Graph as_int8(const Graph& graph, const Tensor& input, bool residuals = false) {
  const std::vector<std::string> layers = quantizable_layers(graph);
  std::map<std::string, float> amax;
  run_reference(graph, {input}, [&](const Node& node, const Tensor& out) {
    float m = 0.0f;
    for (const float v : out.f32()) m = std::max(m, std::fabs(v));
    amax[graph.value(node.output).name] = m;
  });
  float input_amax = 0.0f;
  for (const float v : input.f32()) input_amax = std::max(input_amax, std::fabs(v));
  amax[graph.value(graph.inputs()[0]).name] = input_amax;
  std::map<std::string, float> scales;
  for (const ValueId v : fp8_activation_inputs(graph, layers))
    scales[graph.value(v).name] = scale_for_amax(amax.at(graph.value(v).name), QuantFormat::kInt8);
  Graph int8 = graph;
  rewrite_to_fp8(int8, layers, {scales}, true, QuantFormat::kInt8);
  if (residuals) {
    EXPECT_FALSE(quantize_residuals(int8).empty());
  }
  assign_precision(int8, Precision::kF32);
  int8.compact();
  return int8;
}

void expect_int8_agrees(const Graph& graph, const Tensor& input, bool residuals = false) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const Graph int8 = as_int8(graph, input, residuals);
  const Tensor ours = run_on("cpu", int8, {input}).at(0);
  const Tensor ref = run_on("cpu-reference", int8, {input}).at(0);
  const double difference = relative_difference(ours, ref);
  EXPECT_LE(difference, kInt8BackendTolerance);
  // And it is int8: the int8 error is far larger than the f32 noise between the two.
  const Tensor fp32 = run_on("cpu-reference", graph, {input}).at(0);
  EXPECT_GT(relative_difference(ref, fp32), 10.0 * difference);
}

TEST(OnednnInt8, ConvolutionChainWithReluAgreesWithTheSimulation) {
  SmallGraph g;
  const ValueId x = g.input("x", {8, 12, 12});
  const ValueId a = g.conv(x, 16, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  const ValueId b = g.conv(a, 24, conv_attrs(3, 2, 1, 1, Activation::kRelu));
  g.output(g.conv(b, 8, conv_attrs(1, 1, 0)));
  expect_int8_agrees(g.graph, random_tensor({2, 8, 12, 12}, 5));
}

// Between int8 layers the activations stay int8: a convolution whose only reader is a quantize point
// feeding int8 convolutions writes that point's codes itself, with no quantization step between them.
TEST(OnednnInt8, ConvolutionsFeedingInt8LayersWriteTheirCodes) {
  KILN_SKIP_WITHOUT_INT8_KERNELS();
  SmallGraph g;
  const ValueId x = g.input("x", {8, 12, 12});
  const ValueId a = g.conv(x, 16, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  const ValueId b = g.conv(a, 24, conv_attrs(1, 1, 0));
  g.output(g.conv(b, 8, conv_attrs(1, 1, 0)));
  const Tensor input = random_tensor({2, 8, 12, 12}, 9);
  const Graph int8 = as_int8(g.graph, input);
  CompileOptions options;
  const std::string steps = make_backend("cpu")->compile(int8, options)->describe();
  EXPECT_EQ(testing::count_of(steps, "writes the next layer's codes"), 2u) << steps;
  EXPECT_EQ(testing::count_of(steps, "int8 codes written by the convolution before it"), 2u) << steps;
  expect_int8_agrees(g.graph, input);
}

// The int8 convolution writes f32 and adds the residual as its sum post-op (no pass of its own for the add),
// as an f32 one does.
TEST(OnednnInt8, ResidualAddFusedIntoAnInt8ConvolutionAgrees) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 10, 10});
  const ValueId a = g.conv(x, 16, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  const ValueId b = g.conv(a, 16, conv_attrs(1, 1, 0));
  g.output(g.node(OpKind::kAdd, {b, x}, AddAttrs{Activation::kRelu}));
  const Tensor input = random_tensor({1, 16, 10, 10}, 6);
  const std::string steps = make_backend("cpu")->compile(as_int8(g.graph, input), CompileOptions{})->describe();
  EXPECT_EQ(testing::count_of(steps, "+ sum "), 1u) << steps;  // in place, or on a copy of the graph input
  EXPECT_EQ(testing::count_of(steps, "binary"), 0u) << steps;
  expect_int8_agrees(g.graph, input);
}

// The residual stream in int8 codes: each block's input is stored once, as codes, which its first
// convolution reads and its last accumulates (a codes sum, fusion.h) while writing the next block's codes;
// the last block, whose sum is the graph's output, accumulates into a dequantized copy and writes f32.
TEST(OnednnInt8, ResidualStreamInInt8CodesAgrees) {
  KILN_SKIP_WITHOUT_INT8_KERNELS();
  SmallGraph g;
  ValueId h = g.input("x", {16, 10, 10});
  for (int block = 0; block < 3; ++block) {
    const ValueId a = g.conv(h, 16, conv_attrs(3, 1, 1, 1, Activation::kRelu));
    h = g.node(OpKind::kAdd, {g.conv(a, 16, conv_attrs(1, 1, 0)), h}, AddAttrs{Activation::kRelu});
  }
  g.output(h);
  const Tensor input = random_tensor({2, 16, 10, 10}, 12);
  const std::string steps =
      make_backend("cpu")->compile(as_int8(g.graph, input, true), CompileOptions{})->describe();
  EXPECT_EQ(testing::count_of(steps, "(writes the next layer's codes) "), 5u) << steps;
  EXPECT_EQ(testing::count_of(steps, "+ sum in place"), 2u) << steps;
  EXPECT_EQ(testing::count_of(steps, "+ sum on a dequantized copy"), 1u) << steps;
  EXPECT_EQ(testing::count_of(steps, "binary"), 0u) << steps;
  // The listing names the codes' type: s8, not another reduced type.
  EXPECT_GE(testing::count_of(steps, "nhwc s8->nhwc s8"), 1u) << steps;
  EXPECT_EQ(testing::count_of(steps, "bf16"), 0u) << steps;
  expect_int8_agrees(g.graph, input, true);
}

TEST(OnednnInt8, GroupedAndDepthwiseConvolutionsAgree) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 9, 9});
  const ValueId a = g.conv(x, 32, conv_attrs(3, 1, 1, 4, Activation::kRelu));
  g.output(g.conv(a, 32, conv_attrs(3, 1, 1, 32)));
  expect_int8_agrees(g.graph, random_tensor({1, 16, 9, 9}, 7));
}

// Squeeze-excitation's convolutions: a pooled [N, C, 1, 1] vector, narrow output channels (oneDNN pads
// their weights), SiLU and sigmoid epilogues.
TEST(OnednnInt8, NarrowConvolutionsOnPooledVectorsAgree) {
  SmallGraph g;
  const ValueId x = g.input("x", {48, 1, 1});
  const ValueId a = g.conv(x, 2, conv_attrs(1, 1, 0, 1, Activation::kSilu));
  g.output(g.conv(a, 48, conv_attrs(1, 1, 0, 1, Activation::kSigmoid)));
  expect_int8_agrees(g.graph, random_tensor({2, 48, 1, 1}, 9));
}

TEST(OnednnInt8, TheReferenceRunsAnInt8ConvolutionOnlyWithItsQuantizePoints) {
  SmallGraph g;
  const ValueId x = g.input("x", {4, 5, 5});
  g.output(g.conv(x, 4, conv_attrs(1, 1, 0)));
  Graph graph = g.graph;
  graph.node(graph.value(graph.outputs()[0]).producer).precision = Precision::kI8;
  try {
    run_on("cpu-reference", graph, {random_tensor({1, 4, 5, 5}, 8)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int8 layer 'conv0'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
