// The cpu backend's split-attention kernels (backends/cpu/onednn/radix_kernels.h) on bf16 feature maps:
// reading bf16 must equal reading the same values widened to f32, and writing bf16 must equal writing f32
// and rounding each result once to nearest even (what a bf16 layer's output is, precision.h), bit for bit,
// in every layout the kernels take (NHWC, nChw16c, nChw8c, NCHW) and both output layouts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "testing/random_tensor.h"

#ifdef KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/layout.h"
#include "backends/cpu/onednn/radix_kernels.h"
#endif

namespace kiln {
namespace {

#ifdef KILN_HAVE_ONEDNN

using onednn::ChannelLayout;
using Kind = ChannelLayout::Kind;

struct LayoutCase {
  Kind kind;
  std::int64_t block;  // for kBlocked: 1 (NCHW), 8 or 16
  const char* name;
};

constexpr LayoutCase kLayouts[] = {
    {Kind::kChannelsLast, 0, "nhwc"}, {Kind::kBlocked, 16, "nChw16c"}, {Kind::kBlocked, 8, "nChw8c"},
    {Kind::kBlocked, 1, "nchw"}};

ChannelLayout layout_of(const Shape& shape, const LayoutCase& c) {
  return onednn::channel_layout(onednn::channel_layout_desc(shape, c.kind, c.block), shape);
}

std::int64_t elements(const ChannelLayout& l) { return l.batch * l.image_stride; }

std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

std::vector<float> widened(const std::vector<std::uint16_t>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}

// Bit patterns of f32 results rounded to bf16 once.
std::vector<std::uint16_t> rounded(const std::vector<float>& v) { return to_bf16(v); }

class OnednnRadixKernelsTest : public ::testing::TestWithParam<LayoutCase> {};

// radix 2 over 2 x 64 channels (whole blocks of 8 and 16) of 2 images of 5 x 7 pixels; the weighted sum
// also over a single split (a channel scale).
TEST_P(OnednnRadixKernelsTest, Bf16InAndOutEqualF32ThenRoundedOnce) {
  const LayoutCase c = GetParam();
  for (const std::int64_t radix : {std::int64_t{1}, std::int64_t{2}}) {
    SCOPED_TRACE(::testing::Message() << c.name << ", radix " << radix);
    const std::int64_t n = 2, split = 64, h = 5, w = 7;
    const Shape x_shape{n, radix * split, h, w}, y_shape{n, split, h, w};
    const ChannelLayout xl = layout_of(x_shape, c);
    ASSERT_TRUE(onednn::radix_layout_supported(xl, radix));
    const Tensor values = testing::random_tensor({elements(xl)}, 31, -3.0f, 3.0f);
    const std::vector<std::uint16_t> x16 = to_bf16({values.f32().begin(), values.f32().end()});
    const std::vector<float> x32 = widened(x16);
    const Tensor weights = testing::random_tensor({n, radix * split}, 32, 0.0f, 1.0f);
    for (const LayoutCase& out_case : {c, kLayouts[0]}) {
      const ChannelLayout yl = layout_of(y_shape, out_case);
      if (!onednn::radix_output_supported(xl, yl)) continue;
      SCOPED_TRACE(::testing::Message() << "out " << out_case.name);
      const auto size = static_cast<std::size_t>(elements(yl));
      for (const bool weighted : {false, true}) {
        SCOPED_TRACE(weighted ? "weighted sum" : "sum");
        const auto run = [&](onednn::RadixInput in, onednn::RadixOutput out) {
          if (weighted) {
            onednn::radix_weighted_sum(in, xl, radix, weights.f32().data(), radix * split, out, yl);
          } else {
            onednn::radix_sum(in, xl, radix, out, yl);
          }
        };
        std::vector<float> f32_out(size, 0.0f), bf16_in_f32_out(size, 0.0f);
        std::vector<std::uint16_t> bf16_out(size, 0), f32_in_bf16_out(size, 0);
        run({x32.data(), false}, {f32_out.data(), false});
        run({x16.data(), true}, {bf16_in_f32_out.data(), false});
        run({x16.data(), true}, {bf16_out.data(), true});
        run({x32.data(), false}, {f32_in_bf16_out.data(), true});
        EXPECT_EQ(0, std::memcmp(f32_out.data(), bf16_in_f32_out.data(), size * sizeof(float)));
        EXPECT_TRUE(bf16_out == rounded(f32_out));
        EXPECT_TRUE(f32_in_bf16_out == rounded(f32_out));
      }
    }
    std::vector<float> mean32(static_cast<std::size_t>(n * split)), mean16(mean32.size());
    std::vector<std::uint16_t> mean_bf16(mean32.size());
    onednn::radix_sum_mean({x32.data(), false}, xl, radix, {mean32.data(), false}, split);
    onednn::radix_sum_mean({x16.data(), true}, xl, radix, {mean16.data(), false}, split);
    onednn::radix_sum_mean({x16.data(), true}, xl, radix, {mean_bf16.data(), true}, split);
    EXPECT_EQ(0, std::memcmp(mean32.data(), mean16.data(), mean32.size() * sizeof(float)));
    EXPECT_TRUE(mean_bf16 == rounded(mean32));
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, OnednnRadixKernelsTest, ::testing::ValuesIn(kLayouts),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

#else

TEST(OnednnRadixKernelsTest, SkipsWithoutOnednn) { GTEST_SKIP() << "the oneDNN backend is not built"; }

#endif

}  // namespace
}  // namespace kiln
