// kiln's depthwise convolution kernel (backends/cuda/kernels/depthwise_kernels.h) called directly, against
// the reference convolution: EfficientNet's 3x3 and 5x5 depthwise layers at stride 1 and 2, with SiLU, with
// and without a residual, in f32 and fp16, at channel counts that take 16-byte packs and one that does
// not. In a program the kernel only runs where it wins the timed race against cuDNN, so the operator
// test alone may never reach it. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_kernel_test_util.h"
#include "cuda_test_util.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/kernels/depthwise_kernels.h"
#include "backends/cuda/kernels/host_constants.h"
#include "reference/kernels.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA

struct DepthwiseCase {
  int kernel, stride, channels;
  bool residual, fp16;
};

std::string case_name(const DepthwiseCase& c) {
  return cat(c.kernel, "x", c.kernel, "_stride", c.stride, "_c", c.channels, c.residual ? "_residual" : "",
             c.fp16 ? "_fp16" : "_fp32");
}

void PrintTo(const DepthwiseCase& c, std::ostream* out) { *out << case_name(c); }

class CudaDepthwiseKernelTest : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(CudaDepthwiseKernelTest, MatchesTheReferenceConvolution) {
  KILN_SKIP_WITHOUT_GPU();
  const DepthwiseCase c = GetParam();
  const std::int64_t channels = c.channels;
  const Tensor x = testing::held(testing::random_tensor({2, channels, 11, 11}, 1), c.fp16);
  const Tensor w =
      testing::held(testing::random_tensor({channels, 1, c.kernel, c.kernel}, 2, -0.3f, 0.3f), c.fp16);
  const Tensor bias = testing::held(testing::random_tensor({channels}, 3), c.fp16);
  const ConvAttrs attrs = testing::conv_attrs(c.kernel, c.stride, c.kernel / 2, channels);
  Tensor ref = reference::conv2d(x, w, &bias, attrs);
  const Tensor residual = testing::held(testing::random_tensor(ref.shape(), 4), c.fp16);
  ref = c.residual ? reference::add(ref, residual, Activation::kSilu)
                   : reference::activation(ref, Activation::kSilu);

  const auto dx = testing::on_device(testing::to_nhwc(x), c.fp16);
  const auto dw = testing::on_device(cuda::depthwise_taps(cuda::to_krsc(w)), c.fp16);
  const auto db = testing::on_device(bias, c.fp16);
  const auto dr = testing::on_device(testing::to_nhwc(residual), c.fp16);
  Tensor y(c.fp16 ? DType::kF16 : DType::kF32, {ref.dim(0), ref.dim(2), ref.dim(3), channels});
  cuda::DeviceBuffer dy(y.nbytes());
  const cuda::DepthwiseShape shape{2,
                                   c.channels,
                                   11,
                                   11,
                                   static_cast<int>(ref.dim(2)),
                                   static_cast<int>(ref.dim(3)),
                                   c.kernel,
                                   c.kernel,
                                   c.stride,
                                   c.stride,
                                   c.kernel / 2,
                                   c.kernel / 2,
                                   1,
                                   1};
  cuda::check(
      cuda::depthwise_conv(dx.data(), dw.data(), db.data(), c.residual ? dr.data() : nullptr, dy.data(),
                           c.fp16 ? cuda::Elem::kF16 : cuda::Elem::kF32, shape, cuda::Act::kSilu, nullptr),
      "launching the depthwise kernel");
  cuda::check(cudaMemcpy(y.mutable_bytes(), dy.data(), y.nbytes(), cudaMemcpyDeviceToHost), "download");
  const Tensor ours = testing::to_nchw(y.to(DType::kF32));
  // f32: f32 accumulation of at most 25 products and a fast exponential against double; fp16: one
  // rounding of the output (2^-11 relative at most).
  EXPECT_LE(testing::relative_difference(ours, ref), c.fp16 ? 0x1p-10 : 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    EfficientNetLayers, CudaDepthwiseKernelTest,
    ::testing::Values(DepthwiseCase{3, 1, 24, false, false}, DepthwiseCase{3, 2, 24, false, false},
                      DepthwiseCase{5, 1, 24, false, false}, DepthwiseCase{5, 2, 24, false, false},
                      DepthwiseCase{3, 1, 24, false, true}, DepthwiseCase{3, 2, 24, false, true},
                      DepthwiseCase{5, 1, 24, false, true}, DepthwiseCase{5, 2, 24, false, true},
                      DepthwiseCase{3, 1, 24, true, false}, DepthwiseCase{5, 1, 24, true, true},
                      DepthwiseCase{3, 2, 13, false, false}, DepthwiseCase{5, 1, 13, true, true}),
    [](const auto& param_info) { return case_name(param_info.param); });

TEST(CudaDepthwiseTapsTest, EachTapsWeightsForAllChannelsTogether) {
  // [C = 2, kh = 1, kw = 2, 1]: channel 0 taps (1, 2), channel 1 taps (3, 4).
  const std::vector<float> krsc{1, 2, 3, 4};
  const Tensor taps = cuda::depthwise_taps(Tensor::from_f32({2, 1, 2, 1}, krsc));
  EXPECT_EQ(taps.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(std::vector<float>(taps.f32().begin(), taps.f32().end()), (std::vector<float>{1, 3, 2, 4}));
}

#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
