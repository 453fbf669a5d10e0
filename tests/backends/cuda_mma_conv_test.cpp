// kiln's tensor-core convolution kernel (backends/cuda/kernels/mma_conv_kernels.h) called directly, against
// the reference convolution: 1x1 and 3x3 kernels, stride 1 and 2, as YOLOv10's narrow layers have them (16 ->
// 16, 16 -> 32 stride 2, 32 -> 32, 64 -> 80), 80,000 output pixels, pixel counts that are not a multiple of a
// block's, a residual, every variant, and channel views: x read from the middle of a wider tensor, y written
// into one, whose other channels must stay as they were. In a program the kernel only runs where it wins the
// timed race against cuDNN, so the operator test alone may never reach it. Skips without a GPU; the
// weights' fragment order is checked on any machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_kernel_test_util.h"
#include "cuda_test_util.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/convolution/mma_conv.h"
#include "backends/cuda/kernels/host_constants.h"
#include "reference/kernels.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA

struct MmaCase {
  int c, k, kernel, stride, size;
  bool residual, views;
  int pixel_tiles, channel_tiles;
};

std::string case_name(const MmaCase& c) {
  return cat("c", c.c, "_k", c.k, "_", c.kernel, "x", c.kernel, "_stride", c.stride, "_at", c.size,
             c.residual ? "_residual" : "", c.views ? "_views" : "", "_tiles", c.pixel_tiles, "x",
             c.channel_tiles);
}

void PrintTo(const MmaCase& c, std::ostream* out) { *out << case_name(c); }

// Channels [offset, offset + view.dim(3)) of an NHWC tensor `pitch` channels wide; the others `fill`.
Tensor widened(const Tensor& view, std::int64_t pitch, std::int64_t offset, float fill) {
  const std::int64_t pixels = view.dim(0) * view.dim(1) * view.dim(2), c = view.dim(3);
  Tensor wide(DType::kF32, {view.dim(0), view.dim(1), view.dim(2), pitch});
  for (std::int64_t p = 0; p < pixels; ++p) {
    for (std::int64_t ch = 0; ch < pitch; ++ch) {
      const bool inside = ch >= offset && ch < offset + c;
      wide.mutable_f32()[static_cast<std::size_t>(p * pitch + ch)] =
          inside ? view.f32()[static_cast<std::size_t>(p * c + ch - offset)] : fill;
    }
  }
  return wide;
}

// The view's channels of a wide NHWC tensor, and whether every channel outside it still holds `fill`.
std::tuple<Tensor, bool> narrowed(const Tensor& wide, std::int64_t c, std::int64_t offset, float fill) {
  const std::int64_t pitch = wide.dim(3), pixels = wide.dim(0) * wide.dim(1) * wide.dim(2);
  Tensor view(DType::kF32, {wide.dim(0), wide.dim(1), wide.dim(2), c});
  bool untouched = true;
  for (std::int64_t p = 0; p < pixels; ++p) {
    for (std::int64_t ch = 0; ch < pitch; ++ch) {
      const float v = wide.f32()[static_cast<std::size_t>(p * pitch + ch)];
      if (ch >= offset && ch < offset + c)
        view.mutable_f32()[static_cast<std::size_t>(p * c + ch - offset)] = v;
      else
        untouched = untouched && v == fill;
    }
  }
  return {view, untouched};
}

class CudaMmaConvKernelTest : public ::testing::TestWithParam<MmaCase> {};

TEST_P(CudaMmaConvKernelTest, MatchesTheReferenceConvolution) {
  KILN_SKIP_WITHOUT_GPU();
  const MmaCase c = GetParam();
  const int n = 2, pad = c.kernel / 2;
  const Tensor x = testing::held(testing::random_tensor({n, c.c, c.size, c.size}, 1), true);
  const Tensor w =
      testing::held(testing::random_tensor({c.k, c.c, c.kernel, c.kernel}, 2, -0.2f, 0.2f), true);
  const Tensor bias = testing::held(testing::random_tensor({c.k}, 3), true);
  Tensor ref = reference::conv2d(x, w, &bias, testing::conv_attrs(c.kernel, c.stride, pad));
  const Tensor residual = testing::held(testing::random_tensor(ref.shape(), 4), true);
  ref = c.residual ? reference::add(ref, residual, Activation::kSilu)
                   : reference::activation(ref, Activation::kSilu);
  const int out = static_cast<int>(ref.dim(2));
  // Views: x at channel 16 of a tensor 32 channels wider, y at channel 8 of one 24 wider, the residual
  // at channel 0 of one 8 wider.
  const std::int64_t x_pitch = c.views ? c.c + 32 : c.c, x_at = c.views ? 16 : 0;
  const std::int64_t y_pitch = c.views ? c.k + 24 : c.k, y_at = c.views ? 8 : 0;
  const std::int64_t r_pitch = c.views ? c.k + 8 : c.k;
  constexpr float kFill = 7.0f;
  const auto dx = testing::on_device(widened(testing::to_nhwc(x), x_pitch, x_at, kFill), true);
  const auto dr = testing::on_device(widened(testing::to_nhwc(residual), r_pitch, 0, kFill), true);
  const Shape y_shape{n, out, out, y_pitch};
  Tensor filled(DType::kF32, y_shape);
  std::ranges::fill(filled.mutable_f32(), kFill);
  const auto dy = testing::on_device(filled, true);
  const auto dw = testing::on_device(cuda::mma_conv_fragments(cuda::to_krsc(w)), true);
  const auto db = testing::on_device(bias, true);
  const cuda::MmaConvShape shape{n,
                                 c.c,
                                 c.size,
                                 c.size,
                                 c.k,
                                 out,
                                 out,
                                 c.kernel,
                                 c.stride,
                                 c.stride,
                                 pad,
                                 pad,
                                 static_cast<int>(x_pitch),
                                 static_cast<int>(y_pitch),
                                 static_cast<int>(r_pitch)};
  const cuda::MmaConvVariant variant{c.pixel_tiles, c.channel_tiles};
  ASSERT_TRUE(cuda::mma_conv_takes(shape, variant));
  const auto* x_view = static_cast<const std::uint16_t*>(dx.data()) + x_at;
  auto* y_view = static_cast<std::uint16_t*>(dy.data()) + y_at;
  cuda::check(cuda::mma_conv(x_view, dw.data(), db.data(), c.residual ? dr.data() : nullptr, y_view, shape,
                             variant, cuda::Act::kSilu, nullptr),
              "launching the tensor-core convolution kernel");
  const auto [ours, untouched] = narrowed(testing::from_device(dy, DType::kF16, y_shape), c.k, y_at, kFill);
  EXPECT_TRUE(untouched) << "a channel outside the output view was written";
  // f32 accumulation of at most 9 x 64 products of fp16 values (exact) and one rounding of the output
  // (2^-11 relative at most) against double.
  EXPECT_LE(testing::relative_difference(testing::to_nchw(ours), ref), 0x1p-10);
}

INSTANTIATE_TEST_SUITE_P(YoloLayers, CudaMmaConvKernelTest,
                         ::testing::Values(MmaCase{16, 16, 3, 1, 19, false, false, 1, 2},
                                           MmaCase{16, 16, 3, 1, 19, true, true, 2, 2},
                                           MmaCase{16, 32, 3, 2, 21, false, false, 2, 4},
                                           MmaCase{16, 32, 3, 2, 20, false, true, 1, 1},
                                           MmaCase{32, 32, 3, 1, 13, true, false, 1, 4},
                                           MmaCase{32, 32, 1, 1, 17, false, true, 2, 4},
                                           MmaCase{64, 80, 1, 1, 9, false, false, 1, 2},
                                           MmaCase{32, 64, 3, 1, 11, false, true, 1, 8},
                                           MmaCase{48, 32, 1, 1, 15, true, true, 2, 1},
                                           MmaCase{128, 64, 3, 2, 10, false, false, 2, 2},
                                           MmaCase{32, 32, 3, 1, 200, true, true, 2, 4}),
                         [](const auto& param_info) { return case_name(param_info.param); });

TEST(CudaMmaConvTest, TakesNarrowDenseLayersWithinItsLimits) {
  cuda::ConvGeometry g;
  std::tie(g.c, g.k, g.r, g.s) = std::make_tuple(16, 16, 3, 3);
  EXPECT_TRUE(cuda::KilnMmaConv::takes(g));
  g.c = 8;
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // input channels not a multiple of 16
  std::tie(g.c, g.k) = std::make_tuple(16, 12);
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // output channels not a multiple of 8
  std::tie(g.k, g.r, g.s) = std::make_tuple(16, 5, 5);
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // 5x5
  std::tie(g.r, g.s, g.groups) = std::make_tuple(3, 3, 2);
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // grouped
  std::tie(g.groups, g.c, g.k) = std::make_tuple(1, 1024, 64);
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // even one 8-channel tile's weights exceed 48 KiB
  std::tie(g.c, g.x_pitch) = std::make_tuple(32, 33);
  EXPECT_FALSE(cuda::KilnMmaConv::takes(g));  // an odd pitch
}

TEST(CudaMmaConvTest, AStoredTileShapeRestoresOnlyWhereTheKernelTakesIt) {
  cuda::ConvGeometry g;
  std::tie(g.c, g.k, g.r, g.s, g.pad_h, g.pad_w) = std::make_tuple(32, 32, 3, 3, 1, 1);
  cuda::KilnMmaConv conv(g, cuda::Act::kSilu, false, "a GPU");
  const cuda::TacticRecord stored = cuda::KilnMmaConv::record({cuda::mma_variant_number({2, 4}), 0.05});
  EXPECT_EQ(stored.algorithm, 2 * 16 + 4);
  EXPECT_TRUE(conv.restore(stored));
  EXPECT_FALSE(conv.restore({true, 2 * 16 + 3, 0, 0.05, {}}));  // 3 channel tiles: no such shape
  EXPECT_FALSE(conv.restore({true, 1 * 16 + 8, 0, 0.05, {}}));  // 32 outputs: not 8 tiles of 8
  EXPECT_FALSE(conv.restore({true, 0, 0, 0.05, {}}));
  EXPECT_EQ(conv.key().find(":pitch"), std::string::npos) << conv.key();  // packed
  EXPECT_TRUE(conv.key().starts_with("kiln-mma:")) << conv.key();
}

TEST(CudaMmaConvFragmentsTest, EachLaneHoldsItsOutputChannelsPairsOfInputChannels) {
  // KRSC [O = 8, 1, 1, I = 16] with w[o][i] = 100 o + i.
  std::vector<float> krsc(8 * 16);
  for (int o = 0; o < 8; ++o)
    for (int i = 0; i < 16; ++i) krsc[static_cast<std::size_t>(o * 16 + i)] = static_cast<float>(100 * o + i);
  const Tensor f = cuda::mma_conv_fragments(Tensor::from_f32({8, 1, 1, 16}, krsc));
  EXPECT_EQ(f.shape(), (Shape{1, 1, 32, 4}));
  const auto at = [&](int lane, int v) { return f.f32()[static_cast<std::size_t>(lane * 4 + v)]; };
  // Lane 0: output 0, inputs 0, 1, 8, 9; lane 7: output 1, inputs 6, 7, 14, 15.
  EXPECT_EQ(std::vector<float>({at(0, 0), at(0, 1), at(0, 2), at(0, 3)}), (std::vector<float>{0, 1, 8, 9}));
  EXPECT_EQ(std::vector<float>({at(7, 0), at(7, 1), at(7, 2), at(7, 3)}),
            (std::vector<float>{106, 107, 114, 115}));
}

#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
