// Max and average pooling against explicit window enumeration in padded coordinates, plus cases
// worked out by hand from PyTorch's documented rules (ceil_mode, count_include_pad).
#include <cmath>
#include <limits>
#include <vector>

#include "reference/kernels.h"
#include "core/error.h"
#include "reference_test_util.h"

namespace kiln {
namespace {

using testing::random_tensor;
using testing::values;

PoolAttrs make_pool(std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> stride,
                    std::array<std::int64_t, 4> padding, bool ceil_mode, bool count_include_pad = true) {
  PoolAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.padding = padding;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  return a;
}

// The extent as a count of windows: in floor mode every window that fits the padded input; in
// ceil mode also a window hanging past the padded end by less than a stride, but only while it
// starts inside the input or the begin padding.
std::int64_t enumerated_extent(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pb,
                               std::int64_t pe, bool ceil_mode) {
  const std::int64_t padded = pb + in + pe;
  std::int64_t count = 0;
  for (std::int64_t start = 0; start < padded; start += s) {
    const bool fits = start + k <= padded;
    const bool overhang_kept = ceil_mode && start + k < padded + s && start < pb + in;
    if (fits || overhang_kept) ++count;
  }
  return count;
}

// Enumerates every tap of every window in padded coordinates.
std::vector<double> naive_pool(const Tensor& x, const PoolAttrs& a, bool is_max) {
  const std::int64_t planes = x.dim(0) * x.dim(1), in_h = x.dim(2), in_w = x.dim(3);
  const auto [pt, pl, pb, pr] = a.padding;
  const std::int64_t out_h = enumerated_extent(in_h, a.kernel[0], a.stride[0], pt, pb, a.ceil_mode);
  const std::int64_t out_w = enumerated_extent(in_w, a.kernel[1], a.stride[1], pl, pr, a.ceil_mode);
  const auto xs = x.f32();
  std::vector<double> y;
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        std::int64_t valid = 0, in_padded = 0;
        for (std::int64_t ky = 0; ky < a.kernel[0]; ++ky) {
          for (std::int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            const std::int64_t iy = oy * a.stride[0] + ky - pt, ix = ox * a.stride[1] + kx - pl;
            if (iy >= -pt && iy < in_h + pb && ix >= -pl && ix < in_w + pr) ++in_padded;
            if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
            const double v = xs[(p * in_h + iy) * in_w + ix];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        }
        const std::int64_t divisor = a.count_include_pad ? in_padded : valid;
        y.push_back(is_max ? best : sum / static_cast<double>(divisor));
      }
    }
  }
  return y;
}

TEST(PooledExtent, HandComputedPyTorchCases) {
  // (in, kernel, stride, pad_begin, pad_end, ceil_mode) -> out, from PyTorch's shape formula.
  EXPECT_EQ(reference::pooled_extent(112, 3, 2, 1, 1, false), 56);  // ResNet stem max pool
  EXPECT_EQ(reference::pooled_extent(7, 3, 2, 1, 1, false), 4);
  EXPECT_EQ(reference::pooled_extent(8, 3, 2, 1, 1, false), 4);
  EXPECT_EQ(reference::pooled_extent(7, 3, 2, 1, 1, true), 4);
  EXPECT_EQ(reference::pooled_extent(8, 3, 2, 1, 1, true), 5);  // last window reads row 7 and one pad row
  EXPECT_EQ(reference::pooled_extent(7, 2, 2, 0, 0, false), 3);
  EXPECT_EQ(reference::pooled_extent(7, 2, 2, 0, 0, true), 4);  // ResNet-D shortcut pool on odd sizes
  EXPECT_EQ(reference::pooled_extent(56, 2, 2, 0, 0, true), 28);
  EXPECT_EQ(reference::pooled_extent(5, 2, 2, 1, 1, true), 3);  // 4th window would start in the end pad
  EXPECT_EQ(reference::pooled_extent(5, 3, 3, 1, 1, true), 2);  // likewise
  EXPECT_EQ(reference::pooled_extent(1, 1, 2, 0, 0, true), 1);
  EXPECT_EQ(reference::pooled_extent(3, 3, 1, 0, 0, true), 1);
}

TEST(PooledExtent, MatchesWindowEnumeration) {
  for (std::int64_t in = 1; in <= 12; ++in) {
    for (std::int64_t k = 1; k <= 4; ++k) {
      for (std::int64_t s = 1; s <= 4; ++s) {
        for (std::int64_t pb = 0; pb < k; ++pb) {
          for (std::int64_t pe = 0; pe < k; ++pe) {
            if (in + pb + pe < k) continue;
            for (const bool ceil_mode : {false, true}) {
              EXPECT_EQ(reference::pooled_extent(in, k, s, pb, pe, ceil_mode),
                        enumerated_extent(in, k, s, pb, pe, ceil_mode))
                  << "in " << in << " k " << k << " s " << s << " pads " << pb << "/" << pe << " ceil "
                  << ceil_mode;
            }
          }
        }
      }
    }
  }
}

struct PoolCase {
  const char* name;
  Shape input;
  PoolAttrs attrs;
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MaxMatchesWindowEnumerationExactly) {
  const PoolCase& c = GetParam();
  const Tensor x = random_tensor(c.input, 21);
  const Tensor y = reference::max_pool2d(x, c.attrs);
  const std::vector<double> ref = naive_pool(x, c.attrs, true);
  ASSERT_EQ(static_cast<std::size_t>(y.numel()), ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(y.f32()[i], static_cast<float>(ref[i])) << i;
}

TEST_P(PoolTest, AvgMatchesWindowEnumeration) {
  const PoolCase& c = GetParam();
  const Tensor x = random_tensor(c.input, 22);
  for (const bool include : {false, true}) {
    PoolAttrs a = c.attrs;
    a.count_include_pad = include;
    const Tensor y = reference::avg_pool2d(x, a);
    EXPECT_LE(testing::relative_error(y, naive_pool(x, a, false)), testing::kRelTolerance)
        << "count_include_pad " << include;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PoolTest,
    ::testing::Values(
        PoolCase{"Stem3x3s2p1", {2, 3, 12, 11}, make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false)},
        PoolCase{"Stem3x3s2p1Ceil", {1, 2, 8, 7}, make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, true)},
        PoolCase{"Down2x2Ceil", {1, 4, 7, 9}, make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true)},
        PoolCase{"Down2x2Floor", {1, 4, 7, 9}, make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false)},
        PoolCase{"Asymmetric", {1, 3, 9, 10}, make_pool({3, 2}, {2, 3}, {0, 1, 2, 0}, true)},
        PoolCase{"Overlapping", {2, 2, 6, 6}, make_pool({3, 3}, {1, 1}, {1, 1, 1, 1}, false)},
        PoolCase{"StrideLargerThanKernel", {1, 2, 11, 10}, make_pool({2, 2}, {3, 3}, {1, 0, 1, 1}, true)},
        PoolCase{"DropRule", {1, 1, 5, 5}, make_pool({2, 2}, {2, 2}, {1, 1, 1, 1}, true)}),
    [](const ::testing::TestParamInfo<PoolCase>& test) { return std::string(test.param.name); });

Tensor iota_image(std::int64_t h, std::int64_t w, float sign = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(h * w));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = sign * static_cast<float>(i + 1);
  return Tensor::from_f32({1, 1, h, w}, v);
}

TEST(MaxPool2dReference, HandComputedCases) {
  const auto s2p1 = make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false);
  EXPECT_EQ(values(reference::max_pool2d(iota_image(3, 3), s2p1)), (std::vector<float>{5, 6, 8, 9}));
  // All values negative: a zero from the padding must never win.
  EXPECT_EQ(values(reference::max_pool2d(iota_image(3, 3, -1.0f), s2p1)),
            (std::vector<float>{-1, -2, -4, -5}));
  const auto down = make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true);
  EXPECT_EQ(values(reference::max_pool2d(iota_image(3, 3), down)), (std::vector<float>{5, 6, 8, 9}));
}

TEST(MaxPool2dReference, PropagatesNaN) {
  Tensor x = iota_image(4, 4);
  x.mutable_f32()[5] = std::numeric_limits<float>::quiet_NaN();  // row 1, col 1: the first window only
  const auto y = values(reference::max_pool2d(x, make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false)));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ((std::vector<float>{y[1], y[2], y[3]}), (std::vector<float>{8, 14, 16}));
}

TEST(AvgPool2dReference, CeilModeOnOddSizes) {
  // 2x2 stride 2 ceil_mode on 3x3 (1..9): edge windows hold 2 values, the corner window 1. Without
  // padding the divisor is the same whether or not padding counts.
  for (const bool include : {false, true}) {
    const auto a = make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true, include);
    EXPECT_EQ(values(reference::avg_pool2d(iota_image(3, 3), a)), (std::vector<float>{3, 4.5f, 7.5f, 9}));
  }
  // 5x5 (1..25): row windows {0,1},{2,3},{4}; likewise columns.
  const auto a = make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true, false);
  EXPECT_EQ(values(reference::avg_pool2d(iota_image(5, 5), a)),
            (std::vector<float>{4, 6, 7.5f, 14, 16, 17.5f, 21.5f, 23.5f, 25}));
}

TEST(AvgPool2dReference, PaddingDivisor) {
  // 3x3 stride 2 pad 1 on 3x3 (1..9): every window holds 4 input values.
  const Tensor x = iota_image(3, 3);
  EXPECT_EQ(values(reference::avg_pool2d(x, make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false, false))),
            (std::vector<float>{3, 4, 6, 7}));
  const auto included =
      values(reference::avg_pool2d(x, make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false, true)));
  const std::vector<float> expected{12.0f / 9, 16.0f / 9, 24.0f / 9, 28.0f / 9};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(included[i], expected[i]);
}

// Ones in, so each output is (valid rows * valid cols) / divisor. Per axis, hand-counted for
// kernel 3, stride 2, pad 1: (valid, within the padded input).
void expect_ones_average(std::int64_t in, const std::vector<std::pair<int, int>>& axis, bool ceil_mode) {
  Tensor ones(DType::kF32, {1, 1, in, in});
  for (float& v : ones.mutable_f32()) v = 1.0f;
  const auto y =
      values(reference::avg_pool2d(ones, make_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, ceil_mode, true)));
  ASSERT_EQ(y.size(), axis.size() * axis.size());
  for (std::size_t r = 0; r < axis.size(); ++r) {
    for (std::size_t c = 0; c < axis.size(); ++c) {
      const double expected =
          static_cast<double>(axis[r].first * axis[c].first) / (axis[r].second * axis[c].second);
      EXPECT_FLOAT_EQ(y[r * axis.size() + c], static_cast<float>(expected)) << r << "," << c;
    }
  }
}

TEST(AvgPool2dReference, CountIncludePadOn7x7And8x8) {
  // 7x7: windows start at -1, 1, 3, 5; the last reads rows 5, 6 and the end pad row 7.
  expect_ones_average(7, {{2, 3}, {3, 3}, {3, 3}, {2, 3}}, false);
  expect_ones_average(7, {{2, 3}, {3, 3}, {3, 3}, {2, 3}}, true);
  // 8x8 floor: windows start at -1, 1, 3, 5 and all fit.
  expect_ones_average(8, {{2, 3}, {3, 3}, {3, 3}, {3, 3}}, false);
  // 8x8 ceil: a 5th window starts at 7 and reads row 7, pad row 8, and row 9 past the padded input,
  // which does not count: divisor 2 per axis.
  expect_ones_average(8, {{2, 3}, {3, 3}, {3, 3}, {3, 3}, {1, 2}}, true);
}

TEST(Pool2dReference, RejectsBadArguments) {
  const Tensor x = random_tensor({1, 2, 6, 6}, 3);
  for (const auto pool : {&reference::max_pool2d, &reference::avg_pool2d}) {
    EXPECT_THROW(pool(random_tensor({2, 6, 6}, 3), make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false)), Error);
    EXPECT_THROW(pool(x.to(DType::kBF16), make_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false)), Error);
    EXPECT_THROW(pool(x, make_pool({0, 2}, {2, 2}, {0, 0, 0, 0}, false)), Error);
    EXPECT_THROW(pool(x, make_pool({2, 2}, {2, 0}, {0, 0, 0, 0}, false)), Error);
    EXPECT_THROW(pool(x, make_pool({2, 2}, {2, 2}, {0, 0, -1, 0}, false)), Error);
    EXPECT_THROW(pool(x, make_pool({2, 2}, {2, 2}, {0, 2, 0, 0}, false)), Error);  // pad as large as kernel
    EXPECT_THROW(pool(x, make_pool({9, 2}, {1, 1}, {1, 0, 1, 0}, false)), Error);  // kernel exceeds input
  }
  EXPECT_THROW(reference::pooled_extent(5, 0, 1, 0, 0, false), Error);
  EXPECT_THROW(reference::pooled_extent(5, 2, 0, 0, 0, false), Error);
  EXPECT_THROW(reference::pooled_extent(2, 5, 1, 0, 0, true), Error);
}

}  // namespace
}  // namespace kiln
