// Every other operator on the oneDNN backend against the reference backend: batch norm, activations,
// adds, pooling (ceil mode, padding counted or not), global pooling, flatten, linear and split
// attention, each on graph inputs (row-major) and behind a convolution (in the layout oneDNN chose),
// with channel counts that are and are not multiples of its blocks.
#include <gtest/gtest.h>

#include "backends/cpu/reference/kernels.h"
#include "core/error.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::expect_matches_reference;
using testing::pool_attrs;
using testing::radix_attrs;
using testing::random_tensor;
using testing::SmallGraph;

// The operator's input: the graph input itself, or a 1x1 convolution of it (oneDNN's layout).
ValueId source(SmallGraph& g, ValueId x, bool behind_conv) {
  if (!behind_conv) return x;
  return g.conv(x, g.graph.value(x).shape[1], conv_attrs(1, 1, 0));
}

class OpsTest : public ::testing::TestWithParam<bool> {};  // parameter: behind a convolution

TEST_P(OpsTest, BatchNorm) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const std::int64_t c : {32, 13}) {
    SmallGraph g;
    const ValueId x = source(g, g.input("x", {c, 7, 6}), GetParam());
    const ValueId gamma = g.constant("gamma", {c}, 0.5f, 1.5f), beta = g.constant("beta", {c});
    const ValueId mean = g.constant("mean", {c}), var = g.constant("var", {c}, 0.5f, 2.0f);
    g.output(g.node(OpKind::kBatchNorm, {x, gamma, beta, mean, var}, BatchNormAttrs{1e-5f}));
    expect_matches_reference(g.graph, {random_tensor({2, c, 7, 6}, 1)});
  }
}

TEST_P(OpsTest, Activations) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const Activation a : {Activation::kNone, Activation::kRelu, Activation::kSilu, Activation::kSigmoid}) {
    SCOPED_TRACE(activation_name(a));
    SmallGraph g;
    const ValueId x = source(g, g.input("x", {20, 5, 5}), GetParam());
    g.output(g.node(OpKind::kActivation, {x}, ActivationAttrs{a}));
    expect_matches_reference(g.graph, {random_tensor({1, 20, 5, 5}, 2, -4.0f, 4.0f)});
  }
}

TEST_P(OpsTest, AddOfDifferentLayouts) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const std::int64_t c : {32, 10}) {
    SmallGraph g;
    const ValueId a = source(g, g.input("a", {c, 6, 6}), GetParam());
    const ValueId b = g.input("b", {c, 6, 6});  // row-major, whatever a's layout is
    g.output(g.node(OpKind::kAdd, {a, b}, AddAttrs{Activation::kRelu}));
    g.output(g.node(OpKind::kAdd, {b, a}, AddAttrs{Activation::kNone}));
    expect_matches_reference(g.graph, {random_tensor({4, c, 6, 6}, 3), random_tensor({4, c, 6, 6}, 4)});
  }
}

struct PoolCase {
  OpKind op;
  PoolAttrs attrs;
  std::int64_t size;
};

TEST_P(OpsTest, Pooling) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const PoolCase cases[] = {
      {OpKind::kMaxPool2d, pool_attrs(3, 2, 1), 112},             // the stem's
      {OpKind::kMaxPool2d, pool_attrs(3, 2, 0, true), 8},         // ceil mode
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 1), 56},              // ResNeSt's avd, padding counted
      {OpKind::kAvgPool2d, pool_attrs(3, 1, 1), 9},               // stride 1
      {OpKind::kAvgPool2d, pool_attrs(2, 2, 0, true, false), 7},  // ResNet-D shortcut, ceil, odd size
      {OpKind::kAvgPool2d, pool_attrs(2, 2, 0, true, false), 14},
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 1, true, true), 8},    // ceil with padding counted: fallback
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 0, true, false), 10},  // ceil, padding not counted
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << op_kind_name(c.op) << " k" << c.attrs.kernel[0] << " s" << c.attrs.stride[0] << " p"
                 << c.attrs.padding[0] << " ceil " << c.attrs.ceil_mode << " size " << c.size);
    SmallGraph g;
    const ValueId x = source(g, g.input("x", {24, c.size, c.size}), GetParam());
    g.output(g.node(c.op, {x}, c.attrs));
    expect_matches_reference(g.graph, {random_tensor({2, 24, c.size, c.size}, 5)});
  }
}

TEST_P(OpsTest, GlobalPoolFlattenLinear) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const std::int64_t batch : {1, 4}) {
    for (const bool bias : {true, false}) {
      SmallGraph g;
      const ValueId x = source(g, g.input("x", {48, 7, 7}), GetParam());
      const ValueId flat = g.node(OpKind::kFlatten, {g.node(OpKind::kGlobalAvgPool, {x})});
      const ValueId w = g.constant("fc.weight", {10, 48});
      const ValueId y = bias ? g.node(OpKind::kLinear, {flat, w, g.constant("fc.bias", {10})})
                             : g.node(OpKind::kLinear, {flat, w});
      g.output(y);
      expect_matches_reference(g.graph, {random_tensor({batch, 48, 7, 7}, 6)});
    }
  }
}

// Squeeze-excite: the gate computed from x itself (pooled, 1x1 convs, sigmoid) or given as an input.
TEST_P(OpsTest, ChannelScale) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const std::int64_t c : {32, 24, 13}) {
    SCOPED_TRACE(c);
    SmallGraph g;
    const ValueId x = source(g, g.input("x", {c, 7, 6}), GetParam());
    const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {x});
    const ValueId gate = g.conv(g.conv(pooled, 8, conv_attrs(1, 1, 0, 1, Activation::kSilu)), c,
                                conv_attrs(1, 1, 0, 1, Activation::kSigmoid));
    g.output(g.node(OpKind::kChannelScale, {x, gate}));
    g.output(g.node(OpKind::kChannelScale, {x, g.input("g", {c, 1, 1})}));
    expect_matches_reference(g.graph, {random_tensor({2, c, 7, 6}, 9), random_tensor({2, c, 1, 1}, 10)});
  }
}

// YOLO's data movement: channel halves (C2f's split), concatenation of differently laid out values,
// nearest upsampling, attention and the detection decode (the last two on the reference fallback).
TEST_P(OpsTest, DetectionOperators) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const std::int64_t c : {32, 24}) {
    SCOPED_TRACE(c);
    SmallGraph g;
    const ValueId x = source(g, g.input("x", {c, 6, 5}), GetParam());
    const ValueId low = g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, 0, c / 2});
    const ValueId high = g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, c / 2, c});
    const ValueId mixed = g.conv(high, c / 2, conv_attrs(3, 1, 1));
    g.output(g.node(OpKind::kConcat, {low, mixed, x}, ConcatAttrs{1}));
    g.output(g.node(OpKind::kUpsample, {g.conv(low, 8, conv_attrs(1, 1, 0))}, UpsampleAttrs{2}));
    g.output(g.node(OpKind::kChannelSlice, {x}, SliceAttrs{2, 1, 3}));
    const ValueId qkv = g.conv(x, 2 * (2 * 4 + 8), conv_attrs(1, 1, 0));
    g.output(g.node(OpKind::kAttention, {qkv}, AttentionAttrs{2, 4, 8}));
    const ValueId head = g.conv(x, 4 * 4 + 3, conv_attrs(1, 1, 0));
    const ValueId level = g.node(OpKind::kDetectDecode, {head}, DetectAttrs{4, 8});
    g.output(g.node(OpKind::kConcat, {level, level}, ConcatAttrs{2}));
    expect_matches_reference(g.graph, {random_tensor({2, c, 6, 5}, 11)});
  }
}

INSTANTIATE_TEST_SUITE_P(Inputs, OpsTest, ::testing::Values(false, true), [](const auto& param_info) {
  return param_info.param ? "BehindConv" : "GraphInput";
});

struct RadixCase {
  std::int64_t channels;  // per radix split
  std::int64_t radix, cardinality, size, batch;
  bool grouped_conv;  // the radix tensor comes from a grouped 3x3 conv (Winograd per group when it can)
};

class SplitAttentionTest : public ::testing::TestWithParam<RadixCase> {};

// The whole split-attention block as ResNeSt builds it, plus the unfused radix_sum output.
TEST_P(SplitAttentionTest, MatchesReference) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const RadixCase c = GetParam();
  const RadixAttrs ra = radix_attrs(c.radix, c.cardinality);
  SmallGraph g;
  const std::int64_t total = c.channels * c.radix;
  const ValueId in = g.input("x", {c.grouped_conv ? c.channels : total, c.size, c.size});
  const ValueId x = c.grouped_conv
                        ? g.conv(in, total, conv_attrs(3, 1, 1, c.radix * c.cardinality, Activation::kRelu))
                        : in;
  const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {g.node(OpKind::kRadixSum, {x}, ra)});
  const ValueId attention = g.conv(g.conv(pooled, 32, conv_attrs(1, 1, 0, c.cardinality, Activation::kRelu)),
                                   total, conv_attrs(1, 1, 0, c.cardinality));
  const ValueId weights = g.node(OpKind::kRadixSoftmax, {attention}, ra);
  g.output(g.node(OpKind::kRadixWeightedSum, {x, weights}, ra));
  g.output(g.node(OpKind::kRadixSum, {x}, ra));
  g.output(weights);
  expect_matches_reference(
      g.graph, {random_tensor({c.batch, c.grouped_conv ? c.channels : total, c.size, c.size}, 7)});
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SplitAttentionTest,
    ::testing::Values(RadixCase{64, 2, 1, 16, 1, true},    // Winograd per group, nChw16c splits
                      RadixCase{64, 2, 1, 16, 2, true},    // batch 2: direct grouped conv
                      RadixCase{32, 2, 1, 7, 1, true},     // small image: direct grouped conv
                      RadixCase{24, 2, 1, 9, 1, true},     // splits are not whole blocks
                      RadixCase{16, 4, 2, 8, 2, true},     // radix 4, cardinality 2
                      RadixCase{40, 2, 1, 6, 3, false},    // row-major input
                      RadixCase{12, 1, 1, 5, 2, false}));  // radix 1: sigmoid attention

TEST(SplitAttentionTest, SoftmaxOfFarApartLogitsFlushesTinyWeights) {
  KILN_SKIP_WITHOUT_ONEDNN();
  // Logits 90 apart give weights of e^-90 ~ 8e-40, a subnormal float: the backend flushes it to zero,
  // which moves the result by less than 1e-38.
  Tensor logits(DType::kF32, {1, 64, 1, 1});
  for (std::int64_t i = 0; i < 64; ++i)
    logits.mutable_f32()[static_cast<std::size_t>(i)] = i < 32 ? 45.0f : -45.0f;
  SmallGraph g;
  const ValueId x = g.input("x", {64, 4, 4});
  g.output(g.node(OpKind::kRadixWeightedSum,
                  {x, g.node(OpKind::kRadixSoftmax, {g.input("l", {64, 1, 1})}, radix_attrs(2))},
                  radix_attrs(2)));
  expect_matches_reference(g.graph, {random_tensor({1, 64, 4, 4}, 8), logits});
}

TEST(BackendTest, ChecksInputs) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  g.output(g.conv(g.input("x", {3, 8, 8}), 8, conv_attrs(3, 1, 1)));
  CompileOptions options;
  options.batch = 2;
  auto model = make_backend("cpu")->compile(g.graph, options);
  EXPECT_THROW(model->run({random_tensor({1, 3, 8, 8}, 1)}), Error);  // batch
  EXPECT_THROW(model->run({random_tensor({2, 3, 9, 8}, 1)}), Error);  // image size
  EXPECT_THROW(model->run({}), Error);                                // count
  EXPECT_THROW(model->run({random_tensor({2, 3, 8, 8}, 1).to(DType::kF16)}), Error);
  EXPECT_NO_THROW(model->run({random_tensor({2, 3, 8, 8}, 1)}));
}

TEST(BackendTest, SupportsReportsTheReferenceFallback) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {4, 8, 8});
  const ValueId counted = g.node(OpKind::kAvgPool2d, {x}, pool_attrs(3, 2, 1, true, true));
  const ValueId plain = g.node(OpKind::kAvgPool2d, {x}, pool_attrs(3, 2, 1, false, true));
  const auto backend = make_backend("cpu");
  // ceil_mode adds padding past the declared one here, which oneDNN would count: the reference runs it.
  EXPECT_FALSE(backend->supports(g.graph, g.producer(counted)));
  EXPECT_TRUE(backend->supports(g.graph, g.producer(plain)));
}

TEST(BackendTest, IsListedFirst) {
  KILN_SKIP_WITHOUT_ONEDNN();
  EXPECT_EQ(backend_names().front(), "cpu");
  EXPECT_EQ(make_backend("cpu")->name(), "cpu");
}

}  // namespace
}  // namespace kiln
