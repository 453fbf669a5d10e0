// kiln's RGB stem kernel (backends/cuda/kernels/narrow_conv_kernels.h) called directly, against the reference
// convolution: stems as YOLOv10 (3 -> 16, 3x3 stride 2, SiLU) and EfficientNet (3 -> 32) have them, stride 1
// and 2, widths that are and are not multiples of a block, f32 and fp16. In a program the kernel only
// runs where it wins the timed race against cuDNN, so the operator test alone may never reach it. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "cuda_kernel_test_util.h"
#include "cuda_test_util.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/convolution/narrow_conv.h"
#include "backends/cuda/kernels/host_constants.h"
#include "reference/kernels.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA

struct NarrowCase {
  int c, k, kernel, stride, size;
  bool fp16;
};

std::string case_name(const NarrowCase& c) {
  return cat("c", c.c, "_k", c.k, "_", c.kernel, "x", c.kernel, "_stride", c.stride, "_at", c.size,
             c.fp16 ? "_fp16" : "_fp32");
}

void PrintTo(const NarrowCase& c, std::ostream* out) { *out << case_name(c); }

class CudaNarrowConvKernelTest : public ::testing::TestWithParam<NarrowCase> {};

TEST_P(CudaNarrowConvKernelTest, MatchesTheReferenceConvolution) {
  KILN_SKIP_WITHOUT_GPU();
  const NarrowCase c = GetParam();
  const Tensor x = testing::held(testing::random_tensor({2, c.c, c.size, c.size}, 1), c.fp16);
  const Tensor w =
      testing::held(testing::random_tensor({c.k, c.c, c.kernel, c.kernel}, 2, -0.3f, 0.3f), c.fp16);
  const Tensor bias = testing::held(testing::random_tensor({c.k}, 3), c.fp16);
  const ConvAttrs attrs = testing::conv_attrs(c.kernel, c.stride, c.kernel / 2);
  Tensor ref = reference::conv2d(x, w, &bias, attrs);
  ref = reference::activation(ref, Activation::kSilu);

  const auto dx = testing::on_device(testing::to_nhwc(x), c.fp16);
  const Tensor taps = cuda::narrow_conv_taps(cuda::to_krsc(w));
  const DType stored = c.fp16 ? DType::kF16 : DType::kF32;
  const Shape y_shape{ref.dim(0), ref.dim(2), ref.dim(3), c.k};
  cuda::DeviceBuffer dy(Tensor(stored, y_shape).nbytes());
  const int out = static_cast<int>(ref.dim(2)), pad = c.kernel / 2;
  const cuda::NarrowConvShape shape{2,        c.c,      c.size,   c.size, c.k, out, out, c.kernel,
                                    c.kernel, c.stride, c.stride, pad,    pad, 1,   1};
  const cuda::Elem elem = c.fp16 ? cuda::Elem::kF16 : cuda::Elem::kF32;
  // The stem kernel takes host copies of the weights (already on the fp16 grid where c.fp16: held()).
  const Tensor bias_f32 = bias.to(DType::kF32);
  ASSERT_TRUE(cuda::narrow_conv_is_stem(shape, false)) << case_name(c);
  cuda::check(cuda::stem_conv(dx.data(), taps.f32().data(), bias_f32.f32().data(), dy.data(), elem, shape,
                              cuda::Act::kSilu, nullptr),
              "launching the stem convolution kernel");
  const Tensor ours = testing::to_nchw(testing::from_device(dy, stored, y_shape));
  // f32: f32 accumulation of 27 products and a fast exponential against double; fp16: one
  // rounding of the output (2^-11 relative at most).
  EXPECT_LE(testing::relative_difference(ours, ref), c.fp16 ? 0x1p-10 : 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Stems, CudaNarrowConvKernelTest,
    ::testing::Values(NarrowCase{3, 16, 3, 2, 18, true}, NarrowCase{3, 32, 3, 2, 17, true},
                      NarrowCase{3, 16, 3, 2, 18, false}, NarrowCase{3, 16, 3, 1, 129, true},
                      NarrowCase{3, 32, 3, 2, 61, false}, NarrowCase{3, 16, 3, 1, 33, true},
                      NarrowCase{3, 32, 3, 2, 640, true}),
    [](const auto& param_info) { return case_name(param_info.param); });

TEST(CudaNarrowConvTest, RgbStemsTakeTheStemKernel) {
  cuda::NarrowConvShape s{1, 3, 64, 64, 16, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1};
  EXPECT_TRUE(cuda::narrow_conv_is_stem(s, false));
  EXPECT_FALSE(cuda::narrow_conv_is_stem(s, true));  // a residual
  s.k = 32;
  EXPECT_TRUE(cuda::narrow_conv_is_stem(s, false));
  s.k = 24;
  EXPECT_FALSE(cuda::narrow_conv_is_stem(s, false));  // no instance for 24 outputs
  s.k = 16, s.kernel_h = s.kernel_w = 7;
  EXPECT_FALSE(cuda::narrow_conv_is_stem(s, false));
  s.kernel_h = s.kernel_w = 3, s.c = 4;
  EXPECT_FALSE(cuda::narrow_conv_is_stem(s, false));
}

TEST(CudaNarrowConvTest, TakesDenseRgbStemsOnly) {
  cuda::ConvGeometry g;
  std::tie(g.c, g.k, g.r, g.s) = std::make_tuple(3, 16, 3, 3);
  EXPECT_TRUE(cuda::KilnNarrowConv::takes(g, false));
  EXPECT_FALSE(cuda::KilnNarrowConv::takes(g, true));  // a residual
  std::tie(g.c, g.k, g.r, g.s) = std::make_tuple(3, 32, 7, 7);
  EXPECT_FALSE(cuda::KilnNarrowConv::takes(g, false));  // 7x7
  std::tie(g.c, g.k, g.r, g.s) = std::make_tuple(4, 16, 3, 3);
  EXPECT_FALSE(cuda::KilnNarrowConv::takes(g, false));  // not RGB
  std::tie(g.c, g.k, g.groups) = std::make_tuple(3, 16, 3);
  EXPECT_FALSE(cuda::KilnNarrowConv::takes(g, false));  // grouped
}

TEST(CudaNarrowConvTapsTest, EachTapsAndChannelsWeightsForAllOutputsTogether) {
  // KRSC [O = 2, kh = 1, kw = 1, I = 2]: output 0 reads (1, 2), output 1 reads (3, 4).
  const std::vector<float> krsc{1, 2, 3, 4};
  const Tensor taps = cuda::narrow_conv_taps(Tensor::from_f32({2, 1, 1, 2}, krsc));
  EXPECT_EQ(taps.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(std::vector<float>(taps.f32().begin(), taps.f32().end()), (std::vector<float>{1, 3, 2, 4}));
}

#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
