// conv2d against an im2col + matrix multiply formulation written here from the definition.
#include <algorithm>
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

double closed_form(double v, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return std::max(v, 0.0);
    case Activation::kSilu:
      return v / (1.0 + std::exp(-v));
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-v));
  }
  return NAN;
}

// Lowers each group to columns [group_in * kh * kw][out_h * out_w] (zeros where a tap lands in the
// padding), then multiplies by the group's weight rows [group_out][group_in * kh * kw].
std::vector<double> im2col_conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a) {
  const std::int64_t batch = x.dim(0), in_c = x.dim(1), in_h = x.dim(2), in_w = x.dim(3);
  const std::int64_t out_c = w.dim(0), kh = a.kernel[0], kw = a.kernel[1];
  const std::int64_t out_h =
      (in_h + a.padding[0] + a.padding[2] - a.dilation[0] * (kh - 1) - 1) / a.stride[0] + 1;
  const std::int64_t out_w =
      (in_w + a.padding[1] + a.padding[3] - a.dilation[1] * (kw - 1) - 1) / a.stride[1] + 1;
  const std::int64_t gi = in_c / a.groups, go = out_c / a.groups, rows = gi * kh * kw, cols = out_h * out_w;
  const auto xs = x.f32();
  const auto ws = w.f32();
  std::vector<double> y(static_cast<std::size_t>(batch * out_c * cols));
  std::vector<double> columns(static_cast<std::size_t>(rows * cols));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t g = 0; g < a.groups; ++g) {
      for (std::int64_t row = 0; row < rows; ++row) {
        const std::int64_t c = row / (kh * kw), ky = row / kw % kh, kx = row % kw;
        for (std::int64_t col = 0; col < cols; ++col) {
          const std::int64_t iy = col / out_w * a.stride[0] - a.padding[0] + ky * a.dilation[0];
          const std::int64_t ix = col % out_w * a.stride[1] - a.padding[1] + kx * a.dilation[1];
          const bool inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
          columns[row * cols + col] = inside ? xs[((n * in_c + g * gi + c) * in_h + iy) * in_w + ix] : 0.0;
        }
      }
      for (std::int64_t o = 0; o < go; ++o) {
        const std::int64_t oc = g * go + o;
        for (std::int64_t col = 0; col < cols; ++col) {
          double sum = bias != nullptr ? bias->f32()[oc] : 0.0;
          for (std::int64_t row = 0; row < rows; ++row)
            sum += ws[oc * rows + row] * columns[row * cols + col];
          y[(n * out_c + oc) * cols + col] = closed_form(sum, a.activation);
        }
      }
    }
  }
  return y;
}

struct ConvCase {
  const char* name;
  Shape input;
  std::int64_t out_channels;
  ConvAttrs attrs;
  bool with_bias;
  Shape expected_output;
};

ConvAttrs make_attrs(std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> stride,
                     std::array<std::int64_t, 4> padding, std::array<std::int64_t, 2> dilation,
                     std::int64_t groups, Activation activation = Activation::kNone) {
  ConvAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.padding = padding;
  a.dilation = dilation;
  a.groups = groups;
  a.activation = activation;
  return a;
}

// Keeps ctest's test names readable (gtest would otherwise print the struct's bytes).
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class Conv2dTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dTest, MatchesIm2colMatmul) {
  const ConvCase& c = GetParam();
  const Tensor x = random_tensor(c.input, 11);
  const Tensor w =
      random_tensor({c.out_channels, c.input[1] / c.attrs.groups, c.attrs.kernel[0], c.attrs.kernel[1]}, 12);
  const Tensor b = random_tensor({c.out_channels}, 13);
  const Tensor* bias = c.with_bias ? &b : nullptr;
  const Tensor y = reference::conv2d(x, w, bias, c.attrs);
  EXPECT_EQ(y.shape(), c.expected_output);
  EXPECT_LE(relative_error(y, im2col_conv(x, w, bias, c.attrs)), kRelTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Conv2dTest,
    ::testing::Values(ConvCase{"Plain3x3",
                               {2, 5, 9, 8},
                               6,
                               make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1),
                               true,
                               {2, 6, 9, 8}},
                      ConvCase{"NoPadding",
                               {1, 3, 7, 6},
                               4,
                               make_attrs({3, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                               false,
                               {1, 4, 5, 5}},
                      ConvCase{"Pointwise",
                               {2, 16, 5, 7},
                               8,
                               make_attrs({1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                               true,
                               {2, 8, 5, 7}},
                      ConvCase{"PointwiseStride2",
                               {1, 8, 9, 9},
                               4,
                               make_attrs({1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1),
                               false,
                               {1, 4, 5, 5}},
                      ConvCase{"Stem7x7Stride2",
                               {1, 3, 23, 22},
                               8,
                               make_attrs({7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1),
                               true,
                               {1, 8, 12, 11}},
                      ConvCase{"Groups",
                               {2, 8, 10, 10},
                               12,
                               make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4),
                               true,
                               {2, 12, 10, 10}},
                      ConvCase{"Depthwise",
                               {1, 6, 11, 9},
                               6,
                               make_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6),
                               true,
                               {1, 6, 6, 5}},
                      ConvCase{"DepthwiseMultiplier",
                               {1, 4, 8, 8},
                               8,
                               make_attrs({5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 4),
                               false,
                               {1, 8, 8, 8}},
                      ConvCase{"AsymmetricPadding",
                               {1, 4, 9, 10},
                               5,
                               make_attrs({3, 3}, {2, 2}, {0, 1, 2, 0}, {1, 1}, 1),
                               true,
                               {1, 5, 5, 5}},
                      ConvCase{"Dilation",
                               {1, 4, 12, 11},
                               3,
                               make_attrs({3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1),
                               true,
                               {1, 3, 12, 11}},
                      ConvCase{"Everything",
                               {2, 6, 13, 12},
                               9,
                               make_attrs({3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 3}, 3, Activation::kSilu),
                               true,
                               {2, 9, 6, 4}},
                      ConvCase{"StrideLargerThanKernel",
                               {1, 2, 10, 10},
                               2,
                               make_attrs({2, 2}, {3, 3}, {1, 1, 0, 0}, {1, 1}, 1),
                               true,
                               {1, 2, 4, 4}},
                      ConvCase{"PaddingLargerThanKernel",
                               {1, 2, 4, 5},
                               3,
                               make_attrs({2, 2}, {1, 1}, {3, 2, 1, 4}, {1, 1}, 1),
                               true,
                               {1, 3, 7, 10}},
                      ConvCase{"FusedRelu",
                               {1, 4, 6, 6},
                               4,
                               make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, Activation::kRelu),
                               true,
                               {1, 4, 6, 6}},
                      ConvCase{"FusedSigmoid",
                               {1, 4, 6, 6},
                               4,
                               make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, Activation::kSigmoid),
                               true,
                               {1, 4, 6, 6}}),
    [](const ::testing::TestParamInfo<ConvCase>& test) { return std::string(test.param.name); });

TEST(Conv2dReference, HandComputedCase) {
  // 1x1x3x3 input 1..9, 2x2 all-ones kernel, stride 1, no padding: sums of each 2x2 block, plus bias.
  const Tensor x = Tensor::from_f32({1, 1, 3, 3}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Tensor::from_f32({1, 1, 2, 2}, std::vector<float>{1, 1, 1, 1});
  const Tensor b = Tensor::from_f32({1}, std::vector<float>{0.5f});
  const Tensor y = reference::conv2d(x, w, &b, make_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
  EXPECT_EQ(testing::values(y), (std::vector<float>{12.5f, 16.5f, 24.5f, 28.5f}));
}

TEST(Conv2dReference, RejectsBadArguments) {
  const Tensor x = random_tensor({1, 4, 6, 6}, 1);
  const Tensor w = random_tensor({8, 4, 3, 3}, 2);
  const ConvAttrs a = make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  EXPECT_THROW(reference::conv2d(random_tensor({4, 6, 6}, 1), w, nullptr, a), Error);     // input rank
  EXPECT_THROW(reference::conv2d(x, random_tensor({8, 4, 3}, 2), nullptr, a), Error);     // weight rank
  EXPECT_THROW(reference::conv2d(x, random_tensor({8, 3, 3, 3}, 2), nullptr, a), Error);  // channels
  EXPECT_THROW(reference::conv2d(x, random_tensor({8, 4, 3, 1}, 2), nullptr, a), Error);  // kernel vs attrs
  EXPECT_THROW(reference::conv2d(x, w, nullptr, make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3)), Error);
  EXPECT_THROW(reference::conv2d(random_tensor({1, 6, 6, 6}, 1), random_tensor({9, 3, 3, 3}, 2), nullptr,
                                 make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2)),
               Error);  // output channels not divisible by groups
  EXPECT_THROW(reference::conv2d(x, w, nullptr, make_attrs({3, 3}, {0, 1}, {1, 1, 1, 1}, {1, 1}, 1)), Error);
  EXPECT_THROW(reference::conv2d(x, w, nullptr, make_attrs({3, 3}, {1, 1}, {1, -1, 1, 1}, {1, 1}, 1)), Error);
  EXPECT_THROW(reference::conv2d(x, w, nullptr, make_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {0, 1}, 1)), Error);
  const Tensor short_bias = random_tensor({7}, 3);
  EXPECT_THROW(reference::conv2d(x, w, &short_bias, a), Error);
  EXPECT_THROW(reference::conv2d(x.to(DType::kF16), w, nullptr, a), Error);  // dtype
  // A 9x9 dilated-by-1 kernel does not fit a 6x6 input with padding 1.
  EXPECT_THROW(reference::conv2d(x, random_tensor({8, 4, 9, 9}, 2), nullptr,
                                 make_attrs({9, 9}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)),
               Error);
}

}  // namespace
}  // namespace kiln
