// Per-node precision on the oneDNN backend. An fp16 node ("fp16 storage, fp32 accumulation") reads its
// activations rounded to fp16, uses its constants rounded to fp16 and writes its output rounded to fp16,
// as the reference executor does (which leaves the constants to the plan builder, so the graphs given to
// it here have them rounded already). An fp8 node reads a quantize point's output and dequantized E4M3
// weights, computes in fp32 and writes fp16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#ifdef KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/precision.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::run_on;
using testing::SmallGraph;

// The graph with the constants of its fp16 nodes rounded to fp16, as the plan builder stores them.
Graph with_rounded_constants(const Graph& graph) {
  Graph copy = graph;
  for (std::size_t id = 0; id < copy.nodes().size(); ++id) {
    const Node& node = copy.node(static_cast<NodeId>(id));
    if (node.precision != Precision::kF16) continue;
    for (const ValueId input : node.inputs) {
      Value& v = copy.value(input);
      if (v.is_constant()) v.constant = v.constant.to(DType::kF16).to(DType::kF32);
    }
  }
  return copy;
}

bool written_in_fp16(const Graph& graph, ValueId value) {
  const NodeId producer = graph.value(value).producer;
  return producer != kNoNode && graph.node(producer).precision != Precision::kF32;
}

// Every output against the reference. An fp16 node's output must hold fp16 values. When its inputs are
// the same on both sides (graph inputs, constants), they must equal the reference's, except where the
// fp32 results straddle a rounding boundary, which fp32's different summation order can decide either
// way (then one fp16 step apart, in few elements). Downstream of such a flip, values that read it may
// move by a few fp16 steps: there, and for fp32 outputs, the bound is on the norm, 1e-3 (two fp16 steps
// are 2^-10 relative).
void expect_matches_fp16_reference(const Graph& graph, const Tensor& x, bool inputs_exact) {
  const auto ours = run_on("cpu", graph, {x});
  const auto ref = run_on("cpu-reference", with_rounded_constants(graph), {x});
  ASSERT_EQ(ours.size(), ref.size());
  for (std::size_t o = 0; o < ours.size(); ++o) {
    SCOPED_TRACE(::testing::Message() << "output " << o);
    const auto a = ours[o].f32();
    const auto b = ref[o].f32();
    ASSERT_EQ(a.size(), b.size());
    const bool fp16 = written_in_fp16(graph, graph.outputs()[o]);
    if (!fp16 || !inputs_exact || o > 0) {
      EXPECT_LE(testing::relative_difference(ours[o], ref[o]), 1e-3);
      if (fp16) {
        for (const float v : a) ASSERT_EQ(round_to_f16(v), v) << v << " is not an fp16 value";
      }
      continue;
    }
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(round_to_f16(a[i]), a[i]) << "element " << i << " is not an fp16 value";
      if (a[i] == b[i]) continue;
      ++differing;
      EXPECT_LE(std::fabs(a[i] - b[i]), std::ldexp(std::fabs(b[i]), -10) + 1e-7f) << "element " << i;
    }
    EXPECT_LE(differing, a.size() / 50 + 1) << differing << " of " << a.size() << " elements differ";
  }
}

TEST(PrecisionTest, Fp16ConvolutionOnAGraphInput) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {16, 10, 10}), 32, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.producer(y).precision = Precision::kF16;
  g.output(y);
  expect_matches_fp16_reference(g.graph, random_tensor({2, 16, 10, 10}, 4), true);
}

TEST(PrecisionTest, Fp16ConvolutionBetweenFp32Layers) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.conv(g.input("x", {16, 10, 10}), 16, conv_attrs(1, 1, 0));  // fp32 values in
  const ValueId y = g.conv(x, 32, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.producer(y).precision = Precision::kF16;
  g.output(y);
  g.output(g.conv(y, 8, conv_attrs(1, 1, 0)));  // an fp32 layer reads the rounded values
  expect_matches_fp16_reference(g.graph, random_tensor({2, 16, 10, 10}, 1), false);
}

TEST(PrecisionTest, Fp16GroupedConvolutionSplitAttentionAndLinear) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {32, 16, 16}), 64, conv_attrs(3, 1, 1, 2, Activation::kRelu));
  const ValueId sum = g.node(OpKind::kRadixSum, {y}, testing::radix_attrs(2));
  const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {sum});  // not fused with an fp16 radix_sum
  const ValueId logits = g.node(OpKind::kLinear, {g.node(OpKind::kFlatten, {pooled}),
                                                  g.constant("w", {10, 32}), g.constant("b", {10})});
  for (const ValueId v : {y, sum, logits}) g.producer(v).precision = Precision::kF16;
  g.output(y);
  g.output(sum);
  g.output(logits);
  expect_matches_fp16_reference(g.graph, random_tensor({1, 32, 16, 16}, 2), true);
}

TEST(PrecisionTest, Fp16NodesAreNotFused) {
  KILN_SKIP_WITHOUT_ONEDNN();
  // An fp16 convolution rounds its output before the add reads it; an fp16 add rounds what it reads.
  for (const bool fp16_conv : {true, false}) {
    SCOPED_TRACE(fp16_conv ? "fp16 convolution" : "fp16 add");
    SmallGraph g;
    const ValueId x = g.input("x", {16, 8, 8});
    const ValueId y = g.conv(x, 16, conv_attrs(3, 1, 1));
    const ValueId sum =
        g.node(OpKind::kAdd, {y, g.conv(x, 16, conv_attrs(1, 1, 0))}, AddAttrs{Activation::kRelu});
    g.producer(fp16_conv ? y : sum).precision = Precision::kF16;
    g.output(sum);
    expect_matches_fp16_reference(g.graph, random_tensor({1, 16, 8, 8}, 3), false);
    const Tensor all_f32 = run_on("cpu-reference",
                                  [&] {
                                    Graph copy = g.graph;
                                    copy.node(copy.value(fp16_conv ? y : sum).producer).precision =
                                        Precision::kF32;
                                    return copy;
                                  }(),
                                  {random_tensor({1, 16, 8, 8}, 3)})
                               .at(0);
    EXPECT_GT(testing::relative_difference(run_on("cpu", g.graph, {random_tensor({1, 16, 8, 8}, 3)}).at(0),
                                           all_f32),
              1e-6)
        << "the fp16 rounding was lost";
  }
}

TEST(PrecisionTest, VectorFp16RoundingEqualsTheScalarDefinition) {
#ifndef KILN_HAVE_ONEDNN
  GTEST_SKIP() << "the oneDNN backend is not built";
#else
  // A spread of bit patterns over every exponent (normals, subnormals, infinities, NaN), odd-sized so the
  // vector loop's tail runs too.
  std::vector<float> values;
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099) {
    float value;
    const auto pattern = static_cast<std::uint32_t>(bits);
    std::memcpy(&value, &pattern, sizeof value);
    values.push_back(value);
  }
  std::vector<float> rounded(values.size());
  onednn::round_to_storage(values.data(), rounded.data(), values.size(), Precision::kF16);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float expected = round_to_f16(values[i]);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(rounded[i])) << values[i];
    } else {
      ASSERT_EQ(std::memcmp(&rounded[i], &expected, sizeof expected), 0) << values[i] << " -> " << rounded[i];
    }
  }
#endif
}

TEST(PrecisionTest, Fp8ConvolutionMatchesTheReferenceSimulation) {
  KILN_SKIP_WITHOUT_ONEDNN();
  constexpr float kScale = 1.0f / 64.0f;  // a power of two, so x / scale is exact in the check below
  SmallGraph g;
  const ValueId x = g.input("x", {16, 10, 10});
  const ValueId q = g.node(OpKind::kQuantize, {x}, QuantizeAttrs{kScale});
  const ValueId codes =
      g.graph.add_constant("w.fp8", random_tensor({32, 16, 3, 3}, 7, -448.0f, 448.0f).to(DType::kF8E4M3));
  const ValueId scales = g.constant("w.scale", {32}, 1e-4f, 1e-3f);
  const ValueId w = g.node(OpKind::kDequantize, {codes, scales});
  const ValueId b = g.constant("b", {32});
  const ValueId y =
      g.graph.add_node(OpKind::kConv2d, "conv_fp8", {q, w, b}, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.producer(y).precision = Precision::kF8;
  g.output(y);
  g.output(g.conv(y, 8, conv_attrs(1, 1, 0)));  // an fp32 layer reads the fp16 output
  g.output(q);
  const Tensor input = random_tensor({2, 16, 10, 10}, 5);
  expect_matches_fp16_reference(g.graph, input, true);

  // The quantize point is element-wise and exact: bit-identical on both backends, on the E4M3 grid.
  const Tensor ours = run_on("cpu", g.graph, {input}).at(2);
  const Tensor ref = run_on("cpu-reference", g.graph, {input}).at(2);
  ASSERT_EQ(ours.numel(), ref.numel());
  for (std::size_t i = 0; i < ours.f32().size(); ++i) {
    ASSERT_EQ(ours.f32()[i], ref.f32()[i]) << "element " << i;
    ASSERT_EQ(round_to_e4m3(ours.f32()[i] / kScale), ours.f32()[i] / kScale) << "element " << i;
  }
  EXPECT_GT(testing::relative_difference(ours, input), 1e-3) << "nothing was quantized";
}

}  // namespace
}  // namespace kiln
