// bf16 ("bf16 storage, fp32 accumulation", graph/precision_assignment.h): the reference executor's
// simulation against its definition, the cpu backend's bf16 kernels against that simulation, and the
// refusals and defaults around them. The cpu backend's checks skip, saying why, on a CPU whose oneDNN
// has no bf16 kernels (neither AVX512-BF16 nor AMX-BF16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <regex>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/multiply_adds.h"
#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "plan/plan.h"
#include "runtime/engine.h"
#ifdef KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/precision.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::run_on;
using testing::SmallGraph;

std::string cpu_bf16_refusal() { return make_backend("cpu")->precision_refusal(Precision::kBf16); }

#define KILN_SKIP_WITHOUT_BF16() \
  KILN_SKIP_WITHOUT_ONEDNN();    \
  if (const std::string refusal = cpu_bf16_refusal(); !refusal.empty()) GTEST_SKIP() << refusal

// The graph with every node bf16 and its weights stored in bf16, as `kiln build --precision bf16` makes
// it, widened back to f32 as an engine runs it.
Graph as_bf16(const Graph& graph) {
  Graph copy = graph;
  assign_precision(copy, Precision::kBf16);
  widen_constants_to_f32(copy);
  return copy;
}

Tensor bf16_rounded(const Tensor& t) {
  Tensor r = t.clone();
  for (float& v : r.mutable_f32()) v = round_to_bf16(v);
  return r;
}

bool all_bf16_values(const Tensor& t) {
  for (const float v : t.f32()) {
    if (round_to_bf16(v) != v) return false;
  }
  return true;
}

// Its definition, step by step: a bf16 layer reads its input rounded, computes (here the fp32 reference
// on the rounded operands) and writes its output rounded; a bf16 add then reads both rounded values.
TEST(Bf16Test, ReferenceSimulationFollowsItsDefinitionExactly) {
  SmallGraph g;
  const ValueId x = g.input("x", {8, 9, 9});
  const ValueId y = g.conv(x, 8, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.output(g.node(OpKind::kAdd, {y, x}, AddAttrs{}));
  const Graph bf16 = as_bf16(g.graph);
  const Tensor input = random_tensor({2, 8, 9, 9}, 11);
  const Tensor simulated = run_on("cpu-reference", bf16, {input}).at(0);

  // The convolution alone (SmallGraph seeds its weights in order: the same ones), in fp32, on the
  // weights bf16 stores and the input rounded to bf16.
  SmallGraph c;
  c.output(c.conv(c.input("x", {8, 9, 9}), 8, conv_attrs(3, 1, 1, 1, Activation::kRelu)));
  Graph conv_only = as_bf16(c.graph);
  for (std::size_t id = 0; id < conv_only.nodes().size(); ++id)
    conv_only.node(static_cast<NodeId>(id)).precision = Precision::kF32;
  const Tensor rounded_input = bf16_rounded(input);
  const Tensor conv_out = bf16_rounded(run_on("cpu-reference", conv_only, {rounded_input}).at(0));
  ASSERT_EQ(simulated.numel(), conv_out.numel());
  std::size_t rounded_away = 0;
  for (std::size_t i = 0; i < simulated.f32().size(); ++i) {
    const float expected = round_to_bf16(conv_out.f32()[i] + rounded_input.f32()[i]);
    ASSERT_EQ(simulated.f32()[i], expected) << "element " << i;
    rounded_away += expected != conv_out.f32()[i] + rounded_input.f32()[i];
  }
  EXPECT_GT(rounded_away, simulated.f32().size() / 8) << "the check never saw a rounding";
}

TEST(Bf16Test, VectorRoundingEqualsTheScalarDefinition) {
#ifndef KILN_HAVE_ONEDNN
  GTEST_SKIP() << "the oneDNN backend is not built";
#else
  // A spread of bit patterns over every exponent (normals, subnormals, ties, infinities, NaN).
  std::vector<float> values;
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099) {
    float value;
    const auto pattern = static_cast<std::uint32_t>(bits);
    std::memcpy(&value, &pattern, sizeof value);
    values.push_back(value);
  }
  for (const float tie : {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -3.0f - 0x1p-7f}) values.push_back(tie);
  std::vector<float> rounded(values.size());
  onednn::round_to_storage(values.data(), rounded.data(), values.size(), Precision::kBf16);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float expected = round_to_bf16(values[i]);
    ASSERT_EQ(std::memcmp(&rounded[i], &expected, sizeof expected), 0) << values[i] << " -> " << rounded[i];
  }
#endif
}

// One bf16 convolution on a graph input: both sides read the same rounded input and weights, so their
// outputs agree except where the f32 results straddle a rounding boundary, which the summation order
// decides either way: then one bf16 step (2^-7 of the value at most) apart, in few elements.
TEST(Bf16Test, ConvolutionOnAGraphInputEqualsTheSimulation) {
  KILN_SKIP_WITHOUT_BF16();
  SmallGraph g;
  g.output(g.conv(g.input("x", {32, 12, 12}), 64, conv_attrs(3, 1, 1, 1, Activation::kRelu)));
  const Graph bf16 = as_bf16(g.graph);
  const Tensor input = random_tensor({2, 32, 12, 12}, 4);
  const Tensor ours = run_on("cpu", bf16, {input}).at(0);
  const Tensor ref = run_on("cpu-reference", bf16, {input}).at(0);
  ASSERT_TRUE(all_bf16_values(ours));
  std::size_t differing = 0;
  for (std::size_t i = 0; i < ours.f32().size(); ++i) {
    const float a = ours.f32()[i], b = ref.f32()[i];
    if (a == b) continue;
    ++differing;
    EXPECT_LE(std::fabs(a - b), std::ldexp(std::fabs(b), -7) + 1e-30f) << "element " << i;
  }
  EXPECT_LE(differing, ours.f32().size() / 50 + 1) << differing << " of " << ours.f32().size();
}

// Every step a bf16 network takes on the cpu backend: bf16 convolutions (plain, strided, grouped), a
// residual add fused into a convolution, max and average pooling in bf16, the split-attention kernels
// and global pooling on f32 kernels between them, a linear layer. Bound 1e-2 on the norm: per layer the
// two sides differ by flips of one bf16 step (2^-8 = 3.9e-3 relative, rounding half of that on average)
// in a few elements, plus the fused add's one rounding fewer (at most half a step of the convolution's
// output); these compound over the seven layers to a few 1e-3 (measured 2e-3), and a wrong layout,
// type or missing layer is order 1. The fp32 run of the same graph must differ by more than 1e-4, or the
// bf16 rounding was lost.
TEST(Bf16Test, NetworkOfEveryStepMatchesTheSimulation) {
  KILN_SKIP_WITHOUT_BF16();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 16, 16});
  const ValueId stem = g.conv(x, 32, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  const ValueId pooled = g.node(OpKind::kMaxPool2d, {stem}, testing::pool_attrs(3, 2, 1));
  const ValueId split = g.conv(pooled, 64, conv_attrs(3, 1, 1, 2, Activation::kRelu));
  const ValueId sum = g.node(OpKind::kRadixSum, {split}, testing::radix_attrs(2));
  const ValueId block = g.conv(sum, 32, conv_attrs(1, 1, 0));
  const ValueId residual = g.node(OpKind::kAdd, {block, pooled}, AddAttrs{Activation::kRelu});
  const ValueId down = g.node(OpKind::kAvgPool2d, {residual}, testing::pool_attrs(2, 2, 0));
  const ValueId strided = g.conv(down, 48, conv_attrs(3, 2, 1, 1, Activation::kRelu));
  const ValueId global = g.node(OpKind::kGlobalAvgPool, {strided});
  g.output(g.node(OpKind::kLinear,
                  {g.node(OpKind::kFlatten, {global}), g.constant("w", {10, 48}), g.constant("b", {10})}));
  g.output(down);  // the add itself is no output, so the convolution before it takes it as a sum post-op
  const Graph bf16 = as_bf16(g.graph);
  const Tensor input = random_tensor({1, 16, 16, 16}, 9);
  const auto ours = run_on("cpu", bf16, {input});
  const auto ref = run_on("cpu-reference", bf16, {input});
  const auto fp32 = run_on("cpu-reference", g.graph, {input});
  for (std::size_t o = 0; o < ours.size(); ++o) {
    SCOPED_TRACE(::testing::Message() << "output " << o);
    const double error = testing::relative_difference(ours[o], ref[o]);
    EXPECT_LE(error, 1e-2);
    EXPECT_GT(testing::relative_difference(ours[o], fp32[o]), 1e-4) << "the bf16 rounding was lost";
    EXPECT_TRUE(all_bf16_values(ours[o]));
    std::cout << "output " << o << ": ||cpu - cpu-reference|| / ||cpu-reference|| = " << error << "\n";
  }
  const std::string steps = make_backend("cpu")->compile(bf16, CompileOptions{})->describe();
  EXPECT_NE(steps.find("+ sum"), std::string::npos) << steps;
}

// ResNeSt's split attention in bf16: the radix convolution's output is read by the radix kernels as
// stored (bf16), their mean and the weighted sum are written in bf16 for the convolutions that read them,
// so no reorder widens or narrows the values between them; the result as the reference simulates it (each layer's output
// rounded to bf16 once).
TEST(Bf16Test, SplitAttentionKeepsItsFeatureMapsBf16) {
  KILN_SKIP_WITHOUT_BF16();
  SmallGraph g;
  const ValueId x = g.input("x", {32, 12, 12});
  const ValueId split = g.conv(x, 64, conv_attrs(3, 1, 1, 2, Activation::kRelu));
  const ValueId sum = g.node(OpKind::kRadixSum, {split}, testing::radix_attrs(2));
  const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {sum});
  const ValueId fc1 = g.conv(pooled, 16, conv_attrs(1, 1, 0, 1, Activation::kRelu));
  const ValueId logits = g.conv(fc1, 64, conv_attrs(1, 1, 0));
  const ValueId attention = g.node(OpKind::kRadixSoftmax, {logits}, testing::radix_attrs(2));
  const ValueId weighted = g.node(OpKind::kRadixWeightedSum, {split, attention}, testing::radix_attrs(2));
  g.output(g.conv(weighted, 32, conv_attrs(1, 1, 0)));
  const Graph bf16 = as_bf16(g.graph);
  const Tensor input = random_tensor({1, 32, 12, 12}, 19);
  const auto ours = run_on("cpu", bf16, {input});
  const auto ref = run_on("cpu-reference", bf16, {input});
  // As NetworkOfEveryStepMatchesTheSimulation: oneDNN's bf16 kernels accumulate in another order than
  // the reference, each layer a few f32 roundings apart, which a bf16 rounding can turn into one bf16
  // step (2^-8 relative) of a value.
  EXPECT_LE(testing::relative_difference(ours[0], ref[0]), 1e-2);
  EXPECT_TRUE(all_bf16_values(ours[0]));
  const std::string steps = make_backend("cpu")->compile(bf16, CompileOptions{})->describe();
  // Only the graph input is reordered into bf16: no feature map, and not the pooled vector the gate reads.
  EXPECT_FALSE(std::regex_search(steps, std::regex(R"(\(reorder (nhwc|nChw\d+c))"))) << steps;
  EXPECT_EQ(steps.find("(reorder"), steps.rfind("(reorder")) << steps;
  const std::regex weighted_bf16(R"(radix_weighted_sum \S+ bf16->\S+ bf16)");
  EXPECT_TRUE(std::regex_search(steps, weighted_bf16)) << steps;
  EXPECT_NE(steps.find("radix_sum+mean "), std::string::npos) << steps;
}

TEST(Bf16Test, ConvolutionsRunOnBf16Kernels) {
  KILN_SKIP_WITHOUT_BF16();
  SmallGraph g;
  const ValueId y = g.conv(g.input("x", {32, 12, 12}), 64, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  g.output(g.conv(y, 64, conv_attrs(1, 1, 0)));
  CompileOptions options;
  const std::string steps = make_backend("cpu")->compile(as_bf16(g.graph), options)->describe();
  // The convolutions' kernels are oneDNN's bf16 ones, and the value between the two stays bf16: no
  // reorder widens it back to f32.
  EXPECT_NE(steps.find("bf16"), std::string::npos) << steps;
  const std::regex widening(R"(\(reorder [^)]* bf16->[^)]*\))");
  for (auto it = std::sregex_iterator(steps.begin(), steps.end(), widening); it != std::sregex_iterator();
       ++it) {
    const std::string reorder = it->str();
    EXPECT_NE(reorder.find("bf16", reorder.find("->")), std::string::npos) << reorder << " in\n" << steps;
  }
}

// A backend that says nothing about bf16 gets no bf16 layers: the engine refuses the plan in one line.
class NoBf16Backend final : public Backend {
 public:
  std::string_view name() const override { return "no-bf16"; }
  bool supports(const Graph&, const Node&) const override { return true; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const override {
    return make_backend("cpu-reference")->compile(graph, options);
  }
};

TEST(Bf16Test, ABackendWithoutBf16KernelsRefusesABf16Plan) {
  SmallGraph g;
  g.output(g.conv(g.input("x", {4, 6, 6}), 4, conv_attrs(3, 1, 1)));
  auto plan = std::make_shared<Plan>();
  plan->graph = as_bf16(g.graph);
  const NoBf16Backend backend;
  const std::unique_ptr<Backend> fallback = make_backend("cpu-reference");
  try {
    Engine engine(plan, backend, *fallback, CompileOptions{});
    FAIL() << "a bf16 plan compiled on a backend without bf16 kernels";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bf16"), std::string::npos) << message;
    EXPECT_NE(message.find("no-bf16"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The reference backend simulates bf16 on any CPU.
  EXPECT_EQ(make_backend("cpu-reference")->precision_refusal(Precision::kBf16), "");
}

// Without a --precision, an fp16 manifest builds bf16 on the cpu backend where the CPU runs bf16 and the
// network has at least 1 G multiply-adds per image, else fp32 (fp16 is emulated there, slower than fp32),
// and says why, naming oneDNN's ISA.
TEST(Bf16Test, CpuBackendAdvisesBf16OrFp32OverFp16) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  SmallGraph small, large;
  small.output(small.conv(small.input("x", {16, 32, 32}), 16, conv_attrs(3, 1, 1)));
  large.output(large.conv(large.input("x", {256, 64, 64}), 256, conv_attrs(3, 1, 1)));  // 2.4 G
  EXPECT_EQ(multiply_adds_per_image(small.graph), 32 * 32 * 16 * 16 * 9);
  const auto for_small = cpu->better_default(small.graph, Precision::kF16);
  const auto for_large = cpu->better_default(large.graph, Precision::kF16);
  ASSERT_TRUE(for_small.has_value() && for_large.has_value());
  EXPECT_EQ(for_small->precision, Precision::kF32) << for_small->reason;
  EXPECT_EQ(for_large->precision, cpu_bf16_refusal().empty() ? Precision::kBf16 : Precision::kF32);
  for (const auto& advice : {*for_small, *for_large})
    EXPECT_NE(advice.reason.find("oneDNN ISA"), std::string::npos) << advice.reason;
  EXPECT_FALSE(cpu->better_default(large.graph, Precision::kF32).has_value());
  EXPECT_FALSE(make_backend("cpu-reference")->better_default(large.graph, Precision::kF16).has_value());
}

}  // namespace
}  // namespace kiln
