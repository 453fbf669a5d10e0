// concat, channel_slice, upsample, attention and detect_decode against forms written out independently
// (index arithmetic per element; attention as explicit matrices; DFL with the softmax of each side).
#include <gtest/gtest.h>

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

float at(const Tensor& t, std::int64_t n, std::int64_t c, std::int64_t y, std::int64_t x) {
  return t.f32()[static_cast<std::size_t>(((n * t.dim(1) + c) * t.dim(2) + y) * t.dim(3) + x)];
}

TEST(DetectionReference, ConcatAlongChannelsAndLastAxis) {
  const Tensor a = random_tensor({2, 3, 2, 2}, 1), b = random_tensor({2, 1, 2, 2}, 2);
  const Tensor y = reference::concat({&a, &b}, 1);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 2, 2}));
  std::vector<double> ref;
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 4; ++c)
      for (std::int64_t i = 0; i < 4; ++i)
        ref.push_back(c < 3 ? at(a, n, c, i / 2, i % 2) : at(b, n, 0, i / 2, i % 2));
  EXPECT_LE(relative_error(y, ref), kRelTolerance);

  const Tensor p = random_tensor({2, 3, 5}, 3), q = random_tensor({2, 3, 2}, 4);
  const Tensor z = reference::concat({&p, &q}, 2);
  ASSERT_EQ(z.shape(), (Shape{2, 3, 7}));
  EXPECT_EQ(z.f32()[7 + 5], q.f32()[2]);  // row (0, 1): p's 5 values then q's 2
  EXPECT_THROW(reference::concat({&a, &q}, 1), Error);
  EXPECT_THROW(reference::concat({&a, &b}, 0), Error);
}

TEST(DetectionReference, ChannelSliceOfEachGroup) {
  const Tensor x = random_tensor({2, 12, 3, 2}, 5);
  const Tensor y = reference::channel_slice(x, SliceAttrs{3, 1, 3});  // channels 1, 2, 5, 6, 9, 10
  ASSERT_EQ(y.shape(), (Shape{2, 6, 3, 2}));
  std::vector<double> ref;
  for (std::int64_t n = 0; n < 2; ++n)
    for (const std::int64_t c : {1, 2, 5, 6, 9, 10})
      for (std::int64_t i = 0; i < 6; ++i) ref.push_back(at(x, n, c, i / 2, i % 2));
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
  EXPECT_THROW(reference::channel_slice(x, SliceAttrs{5, 0, 1}), Error);
  EXPECT_THROW(reference::channel_slice(x, SliceAttrs{3, 2, 5}), Error);
}

TEST(DetectionReference, UpsampleNearest) {
  const Tensor x = random_tensor({1, 2, 2, 3}, 6);
  const Tensor y = reference::upsample_nearest(x, 2);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t yy = 0; yy < 4; ++yy)
      for (std::int64_t xx = 0; xx < 6; ++xx) EXPECT_EQ(at(y, 0, c, yy, xx), at(x, 0, c, yy / 2, xx / 2));
}

TEST(DetectionReference, AttentionAsMatrices) {
  const AttentionAttrs attrs{2, 2, 3};  // 2 heads x (q 2 + k 2 + v 3) = 14 channels
  const Tensor qkv = random_tensor({2, 14, 2, 3}, 7, -2.0f, 2.0f);
  const Tensor y = reference::attention(qkv, attrs);
  ASSERT_EQ(y.shape(), (Shape{2, 6, 2, 3}));
  const std::int64_t pixels = 6;
  std::vector<double> ref(static_cast<std::size_t>(y.numel()));
  for (std::int64_t n = 0; n < 2; ++n) {
    for (std::int64_t h = 0; h < 2; ++h) {
      const auto ch = [&](std::int64_t c, std::int64_t p) {
        return double{at(qkv, n, h * 7 + c, p / 3, p % 3)};
      };
      for (std::int64_t i = 0; i < pixels; ++i) {
        std::vector<double> e(static_cast<std::size_t>(pixels));
        double total = 0;
        for (std::int64_t j = 0; j < pixels; ++j) {
          const double logit = (ch(0, i) * ch(2, j) + ch(1, i) * ch(3, j)) / std::sqrt(2.0);
          total += e[static_cast<std::size_t>(j)] = std::exp(logit);
        }
        for (std::int64_t d = 0; d < 3; ++d) {
          double v = 0;
          for (std::int64_t j = 0; j < pixels; ++j)
            v += ch(4 + d, j) * e[static_cast<std::size_t>(j)] / total;
          ref[static_cast<std::size_t>(((n * 6) + h * 3 + d) * pixels + i)] = v;
        }
      }
    }
  }
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
  EXPECT_THROW(reference::attention(random_tensor({1, 13, 2, 2}, 8), attrs), Error);
}

TEST(DetectionReference, DetectDecodeBoxesAndScores) {
  const DetectAttrs attrs{4, 16};                                        // 4 bins per side, stride 16
  const Tensor x = random_tensor({1, 4 * 4 + 3, 2, 3}, 9, -3.0f, 3.0f);  // 3 classes, 2x3 cells
  const Tensor y = reference::detect_decode(x, attrs);
  ASSERT_EQ(y.shape(), (Shape{1, 7, 6}));
  std::vector<double> ref(static_cast<std::size_t>(y.numel()));
  for (std::int64_t p = 0; p < 6; ++p) {
    double side[4];
    for (std::int64_t s = 0; s < 4; ++s) {
      double num = 0, den = 0;
      for (std::int64_t b = 0; b < 4; ++b) {
        const double e = std::exp(double{at(x, 0, s * 4 + b, p / 3, p % 3)});
        num += static_cast<double>(b) * e;
        den += e;
      }
      side[s] = num / den;
    }
    const double cx = static_cast<double>(p % 3) + 0.5, cy = static_cast<double>(p / 3) + 0.5;
    ref[static_cast<std::size_t>(0 * 6 + p)] = (cx + (side[2] - side[0]) / 2) * 16;
    ref[static_cast<std::size_t>(1 * 6 + p)] = (cy + (side[3] - side[1]) / 2) * 16;
    ref[static_cast<std::size_t>(2 * 6 + p)] = (side[0] + side[2]) * 16;
    ref[static_cast<std::size_t>(3 * 6 + p)] = (side[1] + side[3]) * 16;
    for (std::int64_t c = 0; c < 3; ++c) {
      ref[static_cast<std::size_t>((4 + c) * 6 + p)] =
          1 / (1 + std::exp(-double{at(x, 0, 16 + c, p / 3, p % 3)}));
    }
  }
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
  EXPECT_THROW(reference::detect_decode(random_tensor({1, 16, 2, 2}, 10), attrs),
               Error);  // no class channels
}

}  // namespace
}  // namespace kiln
