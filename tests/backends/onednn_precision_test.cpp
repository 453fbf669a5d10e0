// Per-node precision on the oneDNN backend. fp16 nodes ("fp16 storage, fp32 accumulation") must match
// an emulation built from the reference: constants rounded to fp16, the fp32 result rounded to fp16.
// fp8 is not supported yet and must be refused at compile time.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/reference_kernels.h"
#include "core/dtype.h"
#include "core/error.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::run_on;
using testing::SmallGraph;

Tensor rounded_to_f16(const Tensor& t) { return t.to(DType::kF16).to(DType::kF32); }

// The same graph with every constant of an fp16 node rounded to fp16 and all nodes fp32.
Graph emulated(const Graph& graph) {
  Graph copy = graph;
  for (std::size_t id = 0; id < copy.nodes().size(); ++id) {
    Node& node = copy.node(static_cast<NodeId>(id));
    if (node.precision != Precision::kF16) continue;
    for (const ValueId input : node.inputs) {
      Value& v = copy.value(input);
      if (v.is_constant()) v.constant = rounded_to_f16(v.constant);
    }
    node.precision = Precision::kF32;
  }
  return copy;
}

// Ours against round_to_f16(emulation): every value exactly representable in fp16 and equal to the
// rounded emulation, except where the fp32 results straddle a rounding boundary, which fp32's different
// summation order can decide either way (then one fp16 step apart).
void expect_fp16_emulated(const Tensor& ours, const Graph& graph, const Tensor& x) {
  const Tensor emulation = rounded_to_f16(run_on("cpu-reference", emulated(graph), {x}).at(0));
  const auto a = ours.f32();
  const auto b = emulation.f32();
  ASSERT_EQ(a.size(), b.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(round_to_f16(a[i]), a[i]) << "element " << i << " is not an fp16 value";
    if (a[i] == b[i]) continue;
    ++differing;
    EXPECT_LE(std::fabs(a[i] - b[i]), std::ldexp(std::fabs(b[i]), -10) + 1e-7f) << "element " << i;
  }
  EXPECT_LE(differing, a.size() / 100) << differing << " of " << a.size() << " elements differ";
}

TEST(PrecisionTest, Fp16ConvolutionRoundsWeightsAndOutput) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {16, 10, 10}), 32, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.producer(y).precision = Precision::kF16;
  g.output(y);
  const Tensor x = random_tensor({2, 16, 10, 10}, 1);
  expect_fp16_emulated(run_on("cpu", g.graph, {x}).at(0), g.graph, x);

  // An fp32 consumer reads the rounded values.
  const ConvAttrs a = conv_attrs(1, 1, 0);
  const ValueId z = g.conv(y, 8, a);
  g.output(z);
  const auto outputs = run_on("cpu", g.graph, {x});
  const Node& consumer = g.producer(z);
  const Tensor expected = reference::conv2d(outputs.at(0), g.graph.value(consumer.inputs[1]).constant,
                                            &g.graph.value(consumer.inputs[2]).constant, a);
  EXPECT_LE(testing::relative_difference(outputs.at(1), expected), testing::kBackendTolerance);
}

TEST(PrecisionTest, Fp16GroupedConvolutionAndLinear) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {32, 16, 16}), 64, conv_attrs(3, 1, 1, 2, Activation::kRelu));
  g.producer(y).precision = Precision::kF16;
  g.output(y);
  const Tensor x = random_tensor({1, 32, 16, 16}, 2);
  expect_fp16_emulated(run_on("cpu", g.graph, {x}).at(0), g.graph, x);

  // The linear layer reads the rounded convolution output, which the emulation does not round: its
  // outputs must be fp16 values within a few fp16 steps of the emulation.
  const ValueId flat = g.node(OpKind::kFlatten, {g.node(OpKind::kGlobalAvgPool, {y})});
  const ValueId logits = g.node(OpKind::kLinear, {flat, g.constant("w", {10, 64}), g.constant("b", {10})});
  g.producer(logits).precision = Precision::kF16;
  g.output(logits);
  const Tensor ours = run_on("cpu", g.graph, {x}).at(1);
  for (const float v : ours.f32()) EXPECT_EQ(round_to_f16(v), v);
  const Tensor emulation = rounded_to_f16(run_on("cpu-reference", emulated(g.graph), {x}).at(1));
  EXPECT_LE(testing::relative_difference(ours, emulation), 2e-3);
}

TEST(PrecisionTest, Fp16ConvolutionIsNotFusedIntoTheAdd) {
  KILN_SKIP_WITHOUT_ONEDNN();
  // The convolution's own output is rounded before the add, which a fused sum could not do.
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId y = g.conv(x, 16, conv_attrs(3, 1, 1));
  g.producer(y).precision = Precision::kF16;
  const ValueId sum = g.node(OpKind::kAdd, {y, g.conv(x, 16, conv_attrs(1, 1, 0))}, AddAttrs{Activation::kRelu});
  g.output(sum);
  const Tensor in = random_tensor({1, 16, 8, 8}, 3);
  const Tensor ours = run_on("cpu", g.graph, {in}).at(0);
  const Tensor emulation = run_on("cpu-reference", emulated(g.graph), {in}).at(0);
  // The add itself is fp32, so compare loosely: rounding y to fp16 is the only difference that remains.
  EXPECT_LE(testing::relative_difference(ours, emulation), 1e-3);
  Graph all_f32 = g.graph;
  all_f32.node(all_f32.value(y).producer).precision = Precision::kF32;
  EXPECT_GT(testing::relative_difference(ours, run_on("cpu-reference", all_f32, {in}).at(0)), 1e-6)
      << "the fp16 rounding of the convolution's output was lost";
}

TEST(PrecisionTest, Fp8IsRefusedAtCompileTime) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {4, 6, 6}), 4, conv_attrs(3, 1, 1));
  g.producer(y).precision = Precision::kF8;
  g.output(y);
  const auto backend = make_backend("cpu");
  EXPECT_FALSE(backend->supports(g.graph, g.producer(y)));
  EXPECT_THROW(backend->compile(g.graph, {}), Error);
}

}  // namespace
}  // namespace kiln
