// The split-attention operators against literal transcriptions of timm's tensor manipulations:
// channel chunks for the radix splits, and view -> transpose -> softmax -> reshape for RadixSoftmax.
#include <array>
#include <cmath>
#include <vector>

#include "reference/kernels.h"
#include "core/error.h"
#include "reference_test_util.h"

namespace kiln {
namespace {

using testing::kRelTolerance;
using testing::random_tensor;
using testing::relative_error;

RadixAttrs radix_attrs(std::int64_t radix, std::int64_t cardinality) {
  RadixAttrs a;
  a.radix = radix;
  a.cardinality = cardinality;
  return a;
}

// Channels [first, first + count) of an [N, C, H, W] tensor, as doubles in [N, count, H, W] order.
std::vector<double> channel_chunk(const Tensor& x, std::int64_t first, std::int64_t count) {
  const std::int64_t area = x.numel() / (x.dim(0) * x.dim(1));
  std::vector<double> chunk;
  for (std::int64_t n = 0; n < x.dim(0); ++n) {
    for (std::int64_t c = first; c < first + count; ++c) {
      for (std::int64_t i = 0; i < area; ++i) chunk.push_back(x.f32()[(n * x.dim(1) + c) * area + i]);
    }
  }
  return chunk;
}

// A read-only strided 4-D view, enough to mimic view(), transpose() and a contiguous reshape().
struct View4 {
  const std::vector<double>* data;
  std::array<std::int64_t, 4> shape;
  std::array<std::int64_t, 4> stride;
  double at(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) const {
    return (*data)[a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3]];
  }
  View4 transposed12() const {
    return {data, {shape[0], shape[2], shape[1], shape[3]}, {stride[0], stride[2], stride[1], stride[3]}};
  }
};

// timm's RadixSoftmax for radix > 1: x.view(B, card, radix, -1).transpose(1, 2), softmax over dim 1,
// then reshape(B, -1), which copies in the transposed order.
std::vector<double> timm_radix_softmax(const Tensor& logits, std::int64_t radix, std::int64_t card) {
  const std::vector<double> flat(logits.f32().begin(), logits.f32().end());
  const std::int64_t batch = logits.dim(0), rest = logits.dim(1) / (card * radix);
  const View4 viewed{&flat, {batch, card, radix, rest}, {card * radix * rest, radix * rest, rest, 1}};
  const View4 t = viewed.transposed12();  // [B, radix, card, rest]
  std::vector<double> out;
  for (std::int64_t b = 0; b < t.shape[0]; ++b) {
    for (std::int64_t r = 0; r < t.shape[1]; ++r) {
      for (std::int64_t g = 0; g < t.shape[2]; ++g) {
        for (std::int64_t p = 0; p < t.shape[3]; ++p) {
          double denominator = 0.0;
          for (std::int64_t q = 0; q < t.shape[1]; ++q) denominator += std::exp(t.at(b, q, g, p));
          out.push_back(std::exp(t.at(b, r, g, p)) / denominator);
        }
      }
    }
  }
  return out;
}

class RadixTest : public ::testing::TestWithParam<std::array<std::int64_t, 2>> {};

TEST_P(RadixTest, SumAddsChannelChunks) {
  const auto [radix, card] = GetParam();
  const std::int64_t c = 6;
  const Tensor x = random_tensor({2, radix * c, 3, 4}, 81);
  std::vector<double> ref(static_cast<std::size_t>(2 * c * 12), 0.0);
  for (std::int64_t r = 0; r < radix; ++r) {
    const auto chunk = channel_chunk(x, r * c, c);
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += chunk[i];
  }
  const Tensor y = reference::radix_sum(x, radix_attrs(radix, card));
  EXPECT_EQ(y.shape(), (Shape{2, c, 3, 4}));
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
}

TEST_P(RadixTest, WeightedSumScalesChunksPerChannel) {
  const auto [radix, card] = GetParam();
  const std::int64_t c = 4;
  const Tensor x = random_tensor({2, radix * c, 5, 3}, 82);
  const Tensor w = random_tensor({2, radix * c, 1, 1}, 83, 0.0f, 1.0f);
  std::vector<double> ref(static_cast<std::size_t>(2 * c * 15), 0.0);
  for (std::int64_t r = 0; r < radix; ++r) {
    const auto chunk = channel_chunk(x, r * c, c);
    const auto weight = channel_chunk(w, r * c, c);  // [N, C]; broadcast over H, W
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += chunk[i] * weight[i / 15];
  }
  const Tensor y = reference::radix_weighted_sum(x, w, radix_attrs(radix, card));
  EXPECT_EQ(y.shape(), (Shape{2, c, 5, 3}));
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
  // [N, K] weights are accepted too and mean the same.
  const Tensor y2 = reference::radix_weighted_sum(x, w.reshaped({2, radix * c}), radix_attrs(radix, card));
  EXPECT_EQ(testing::values(y2), testing::values(y));
}

TEST_P(RadixTest, SoftmaxMatchesViewTransposeSoftmax) {
  const auto [radix, card] = GetParam();
  const std::int64_t channels = 8;  // per radix split; 8 / card channels per group
  const Tensor logits = random_tensor({3, radix * channels, 1, 1}, 84, -4.0f, 4.0f);
  const Tensor y = reference::radix_softmax(logits, radix_attrs(radix, card));
  EXPECT_EQ(y.shape(), logits.shape());
  EXPECT_LE(relative_error(y, timm_radix_softmax(logits, radix, card)), kRelTolerance);
  // The weights of one channel across the radix splits of the output sum to one.
  for (std::int64_t n = 0; n < 3; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      double sum = 0.0;
      for (std::int64_t r = 0; r < radix; ++r) sum += y.f32()[(n * radix + r) * channels + c];
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    RadixAndCardinality, RadixTest,
    ::testing::Values(std::array<std::int64_t, 2>{2, 1}, std::array<std::int64_t, 2>{2, 2},
                      std::array<std::int64_t, 2>{4, 1}, std::array<std::int64_t, 2>{4, 2}),
    [](const auto& test) {
      return "Radix" + std::to_string(test.param[0]) + "Card" + std::to_string(test.param[1]);
    });

TEST(RadixSoftmaxReference, HandComputedLayout) {
  // radix 2, cardinality 2, one channel per group: input [g0r0, g0r1, g1r0, g1r1].
  const Tensor logits = Tensor::from_f32({1, 4, 1, 1}, std::vector<float>{0.0f, std::log(3.0f), 1.0f, 1.0f});
  const auto y = testing::values(reference::radix_softmax(logits, radix_attrs(2, 2)));
  // Output [r0g0, r0g1, r1g0, r1g1].
  const std::vector<float> expected{0.25f, 0.5f, 0.75f, 0.5f};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(y[i], expected[i]) << i;
}

TEST(RadixSoftmaxReference, RadixOneIsSigmoid) {
  const Tensor logits = random_tensor({2, 6, 1, 1}, 85, -5.0f, 5.0f);
  for (const std::int64_t card : {1, 2}) {
    std::vector<double> ref;
    for (const float v : logits.f32()) ref.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
    EXPECT_LE(relative_error(reference::radix_softmax(logits, radix_attrs(1, card)), ref), kRelTolerance);
  }
}

TEST(RadixSoftmaxReference, LargeLogitsStayFinite) {
  const Tensor logits = Tensor::from_f32({1, 2, 1, 1}, std::vector<float>{1000.0f, 999.0f});
  const auto y = testing::values(reference::radix_softmax(logits, radix_attrs(2, 1)));
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(1.0 / (1.0 + std::exp(-1.0))));
  EXPECT_FLOAT_EQ(y[1], static_cast<float>(1.0 / (1.0 + std::exp(1.0))));
}

TEST(SplitAttentionReference, RejectsBadArguments) {
  const Tensor x = random_tensor({1, 8, 2, 2}, 1);
  EXPECT_THROW(reference::radix_sum(x, radix_attrs(3, 1)), Error);  // 8 channels, radix 3
  EXPECT_THROW(reference::radix_sum(x, radix_attrs(0, 1)), Error);
  EXPECT_THROW(reference::radix_sum(random_tensor({8, 2, 2}, 1), radix_attrs(2, 1)), Error);
  EXPECT_THROW(reference::radix_softmax(random_tensor({1, 6, 1, 1}, 1), radix_attrs(2, 2)), Error);
  EXPECT_THROW(reference::radix_softmax(random_tensor({1, 8, 2, 1}, 1), radix_attrs(2, 1)), Error);
  EXPECT_THROW(reference::radix_softmax(random_tensor({1, 8, 1, 1}, 1), radix_attrs(2, 0)), Error);
  EXPECT_THROW(reference::radix_softmax(random_tensor({8}, 1), radix_attrs(2, 1)), Error);
  EXPECT_THROW(reference::radix_weighted_sum(x, random_tensor({1, 4, 1, 1}, 2), radix_attrs(2, 1)), Error);
  EXPECT_THROW(reference::radix_weighted_sum(x, random_tensor({2, 8, 1, 1}, 2), radix_attrs(2, 1)), Error);
  EXPECT_THROW(reference::radix_weighted_sum(x, random_tensor({1, 8, 2, 2}, 2), radix_attrs(2, 1)), Error);
  EXPECT_THROW(
      reference::radix_weighted_sum(x, random_tensor({1, 8, 1, 1}, 2).to(DType::kF16), radix_attrs(2, 1)),
      Error);
}

}  // namespace
}  // namespace kiln
