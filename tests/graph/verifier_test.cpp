// The verifier's per-operator rules, as the operator table (graph/op_info.h) states them: which inputs
// must be constant weights, and which attribute struct a node holds.
#include "graph/verifier.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {
namespace {

Tensor ones(Shape shape) {
  Tensor tensor(DType::kF32, std::move(shape));
  for (float& element : tensor.mutable_f32()) element = 1.0f;
  return tensor;
}

void expect_verify_error(const Graph& graph, const std::string& expected) {
  try {
    verify(graph);
    FAIL() << "expected an error containing: " << expected;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

ConvAttrs conv1x1() { return ConvAttrs{}; }

TEST(Verifier, ConvolutionAndLinearWeightsAndBiasesMustBeConstant) {
  for (const std::size_t weight_input : {1u, 2u}) {
    Graph graph;
    const ValueId x = graph.add_input("x", {1, 3, 4, 4});
    std::vector<ValueId> inputs = {x, graph.add_constant("w", ones({2, 3, 1, 1})),
                                   graph.add_constant("b", ones({2}))};
    inputs[weight_input] = graph.add_input("fed", weight_input == 1 ? Shape{2, 3, 1, 1} : Shape{2});
    graph.mark_output(graph.add_node(OpKind::kConv2d, "conv", inputs, conv1x1()));
    expect_verify_error(
        graph, "layer 'conv': input " + std::to_string(weight_input) + " ('fed') must be a constant weight");
  }
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 3});
  const ValueId w = graph.add_input("fc.weight", {2, 3});
  graph.mark_output(graph.add_node(OpKind::kLinear, "fc", {x, w}));
  expect_verify_error(graph, "layer 'fc': input 1 ('fc.weight') must be a constant weight");
}

TEST(Verifier, BatchNormStatisticsMustBeConstant) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 2, 4, 4});
  std::vector<ValueId> inputs = {x};
  for (const char* part : {"weight", "bias", "running_mean"}) {
    inputs.push_back(graph.add_constant(std::string("bn.") + part, ones({2})));
  }
  inputs.push_back(graph.add_input("bn.running_var", {2}));
  graph.mark_output(graph.add_node(OpKind::kBatchNorm, "bn", inputs, BatchNormAttrs{}));
  expect_verify_error(graph, "layer 'bn': input 4 ('bn.running_var') must be a constant weight");
}

TEST(Verifier, DequantizeReadsConstantsOnlyAndFeedsWeights) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 3, 4, 4});
  const ValueId codes = graph.add_constant("w_fp8", ones({2, 3, 1, 1}));
  const ValueId scales = graph.add_constant("w_scale", ones({2}));
  const ValueId weight = graph.add_node(OpKind::kDequantize, "w_dequantize", {codes, scales});
  graph.mark_output(graph.add_node(OpKind::kConv2d, "conv", {x, weight}, conv1x1()));
  verify(graph);  // a dequantized weight counts as a constant one

  Graph fed = graph;
  fed.node(*fed.find_node("w_dequantize")).inputs[1] = fed.add_input("scales", {2});
  expect_verify_error(fed, "layer 'w_dequantize': input 1 ('scales') must be a constant weight");
}

TEST(Verifier, OperatorsWithoutWeightsAcceptConstantAndComputedInputs) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 2, 4, 4});
  const ValueId bias = graph.add_constant("bias", ones({1, 2, 4, 4}));
  const ValueId sum = graph.add_node(OpKind::kAdd, "add", {x, bias}, AddAttrs{});
  graph.mark_output(graph.add_node(OpKind::kAdd, "add2", {bias, sum}, AddAttrs{}));
  verify(graph);
}

TEST(Verifier, ANodeHoldsTheAttributeStructOfItsOperator) {
  // Shape inference reads no attributes for these operators, so only the verifier sees the mistake.
  Graph linear;
  const ValueId x = linear.add_input("x", {1, 3});
  const ValueId w = linear.add_constant("fc.weight", ones({2, 3}));
  linear.mark_output(linear.add_node(OpKind::kLinear, "fc", {x, w}, ConvAttrs{}));
  expect_verify_error(linear, "layer 'fc' (linear): holds conv attributes, expected no attributes");

  Graph pool;
  const ValueId image = pool.add_input("x", {1, 2, 4, 4});
  const ValueId gap = pool.add_node(OpKind::kGlobalAvgPool, "gap", {image}, PoolAttrs{});
  pool.mark_output(pool.add_node(OpKind::kFlatten, "flatten", {gap}));
  expect_verify_error(pool, "layer 'gap' (global_avg_pool): holds pool attributes, expected no attributes");

  Graph edited;
  const ValueId input = edited.add_input("x", {1, 2, 4, 4});
  const ValueId act = edited.add_node(OpKind::kActivation, "act", {input}, ActivationAttrs{});
  edited.mark_output(act);
  edited.node(edited.value(act).producer).attrs = AddAttrs{};
  expect_verify_error(edited,
                      "layer 'act' (activation): holds add attributes, expected activation attributes");
}

}  // namespace
}  // namespace kiln
