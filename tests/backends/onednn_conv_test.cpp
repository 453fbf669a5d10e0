// Convolutions on the oneDNN backend against the reference backend: layouts oneDNN picks for itself,
// channel counts that are not multiples of its blocks, groups (and the per-group Winograd route),
// strides, dilation, asymmetric padding, fused activations, batch 1 and 4, and the residual add folded
// into the convolution as a sum post-op, in place or on a copy.
#include <gtest/gtest.h>

#include "onednn_graph_util.h"
#include "onednn_test_util.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::expect_matches_reference;
using testing::random_tensor;
using testing::SmallGraph;

struct ConvCase {
  std::int64_t in, out, k, stride, pad, groups, dilation;
  Activation activation;
  bool bias;
  std::int64_t batch, size;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesReference) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const ConvCase c = GetParam();
  SmallGraph g;
  const ValueId x = g.input("x", {c.in, c.size, c.size});
  g.output(g.conv(x, c.out, conv_attrs(c.k, c.stride, c.pad, c.groups, c.activation, c.dilation), c.bias));
  expect_matches_reference(g.graph, {random_tensor({c.batch, c.in, c.size, c.size}, 1)});
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{3, 32, 3, 2, 1, 1, 1, Activation::kRelu, true, 1, 33},    // stem, odd size
                      ConvCase{16, 32, 1, 1, 0, 1, 1, Activation::kNone, false, 1, 14},  // 1x1, no bias
                      ConvCase{24, 40, 3, 1, 1, 1, 1, Activation::kSilu, true, 1, 13},  // not multiples of 16
                      ConvCase{7, 5, 3, 2, 1, 1, 1, Activation::kSigmoid, true, 4, 9},  // odd, batch 4
                      ConvCase{32, 64, 3, 1, 1, 2, 1, Activation::kRelu, true, 1, 16},  // Winograd per group
                      ConvCase{64, 128, 3, 1, 1, 2, 1, Activation::kRelu, true, 1, 28},  // Winograd per group
                      ConvCase{32, 64, 3, 1, 1, 2, 1, Activation::kRelu, true, 4, 16},   // grouped, batch 4
                      ConvCase{24, 48, 3, 1, 1, 4, 1, Activation::kNone, true, 1, 10},   // 4 groups of 6
                      ConvCase{16, 16, 3, 1, 2, 1, 2, Activation::kRelu, true, 1, 12},   // dilation 2
                      ConvCase{64, 32, 3, 2, 1, 2, 1, Activation::kRelu, true, 2, 15}));  // grouped, stride 2

TEST(ConvTest, AsymmetricPadding) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 11, 12});
  ConvAttrs a = conv_attrs(3, 2, 0);
  a.padding = {0, 1, 2, 0};
  g.output(g.conv(x, 32, a));
  expect_matches_reference(g.graph, {random_tensor({2, 16, 11, 12}, 2)});
}

// add(conv(x), other) + relu where `other` is read by nobody afterwards: accumulated into in place when
// it has the convolution's layout, else copied into the result first.
TEST(ConvAddFusionTest, AccumulatesIntoTheOtherOperand) {
  KILN_SKIP_WITHOUT_ONEDNN();
  for (const bool other_from_conv : {true, false}) {
    for (const std::int64_t channels : {32, 24}) {
      SCOPED_TRACE(::testing::Message() << channels << " channels, other from a conv: " << other_from_conv);
      SmallGraph g;
      const ValueId x = g.input("x", {16, 9, 9});
      const ValueId other = other_from_conv
                                ? g.conv(g.input("skip", {8, 9, 9}), channels, conv_attrs(1, 1, 0))
                                : g.input("skip", {channels, 9, 9});
      const ValueId y = g.conv(x, channels, conv_attrs(3, 1, 1));
      g.output(g.node(OpKind::kAdd, {y, other}, AddAttrs{Activation::kRelu}));
      const std::int64_t skip_channels = other_from_conv ? 8 : channels;
      expect_matches_reference(g.graph,
                               {random_tensor({1, 16, 9, 9}, 3), random_tensor({1, skip_channels, 9, 9}, 4)});
    }
  }
}

// The other operand is read again after the add (here: it is also a graph output), so the sum must
// go to a copy and leave it intact.
TEST(ConvAddFusionTest, KeepsAnOperandThatIsReadLater) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId other = g.conv(x, 32, conv_attrs(1, 1, 0, 1, Activation::kRelu));
  const ValueId y = g.conv(x, 32, conv_attrs(3, 1, 1));
  const ValueId sum = g.node(OpKind::kAdd, {other, y}, AddAttrs{Activation::kNone});
  g.output(sum);
  g.output(g.node(OpKind::kAdd, {other, other}, AddAttrs{}));  // reads `other` after the fused add
  expect_matches_reference(g.graph, {random_tensor({4, 16, 8, 8}, 5)});
}

// add(conv(x), x): the other operand is the convolution's own input, which must not be overwritten
// while the convolution reads it.
TEST(ConvAddFusionTest, OtherOperandIsTheConvolutionInput) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.conv(g.input("x", {32, 10, 10}), 32, conv_attrs(1, 1, 0));
  const ValueId y = g.conv(x, 32, conv_attrs(3, 1, 1, 2));
  g.output(g.node(OpKind::kAdd, {y, x}, AddAttrs{Activation::kRelu}));
  expect_matches_reference(g.graph, {random_tensor({1, 32, 10, 10}, 6)});
}

// A ResNet shortcut: both add operands come from convolutions; one is folded into the other.
TEST(ConvAddFusionTest, BothOperandsFromConvolutions) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 12, 12});
  const ValueId main =
      g.conv(g.conv(x, 8, conv_attrs(1, 1, 0, 1, Activation::kRelu)), 64, conv_attrs(1, 1, 0));
  const ValueId shortcut = g.conv(x, 64, conv_attrs(1, 1, 0));
  g.output(g.node(OpKind::kAdd, {main, shortcut}, AddAttrs{Activation::kRelu}));
  expect_matches_reference(g.graph, {random_tensor({1, 16, 12, 12}, 7)});
  expect_matches_reference(g.graph, {random_tensor({4, 16, 12, 12}, 8)});
}

// A convolution with its activation already fused keeps it before the sum: act2(act1(conv) + other).
TEST(ConvAddFusionTest, ActivationBeforeAndAfterTheSum) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId y = g.conv(x, 16, conv_attrs(3, 1, 1, 1, Activation::kSigmoid));
  g.output(g.node(OpKind::kAdd, {y, g.input("other", {16, 8, 8})}, AddAttrs{Activation::kSilu}));
  expect_matches_reference(g.graph, {random_tensor({2, 16, 8, 8}, 9), random_tensor({2, 16, 8, 8}, 10)});
}

}  // namespace
}  // namespace kiln
