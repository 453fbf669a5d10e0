// kiln's attention kernels (backends/cuda/kernels/attention_kernels.h) called directly, against the reference
// attention: the split-key kernel and the tensor-core one, at YOLOv10n's and YOLOv10s's PSA sizes at
// batch 1 (several key splits) and batch 8 (one), at pixel counts that are no multiple of the tiles,
// and at the widest key and value widths the kernels hold; in f32 and fp16. Then how the keys are split.
// Skips the kernels without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda_kernel_test_util.h"
#include "cuda_test_util.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/kernels/attention_kernels.h"
#include "reference/kernels.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA

struct AttentionCase {
  int n, height, width, heads, key_dim, head_dim;
  bool fp16;
};

std::string case_name(const AttentionCase& c) {
  return cat("n", c.n, "_", c.height, "x", c.width, "_heads", c.heads, "_kd", c.key_dim, "_hd", c.head_dim,
             c.fp16 ? "_fp16" : "_fp32");
}

void PrintTo(const AttentionCase& c, std::ostream* out) { *out << case_name(c); }

cuda::AttentionShape shape_of(const AttentionCase& c) {
  return {c.n,       c.height * c.width, c.heads,
          c.key_dim, c.head_dim,         static_cast<float>(std::pow(static_cast<double>(c.key_dim), -0.5))};
}

class CudaAttentionKernelTest : public ::testing::TestWithParam<AttentionCase> {
 protected:
  // The inputs as the kernels read them, and the reference's result for them.
  void SetUp() override {
    KILN_SKIP_WITHOUT_GPU();
    const AttentionCase& c = GetParam();
    const std::int64_t channels = c.heads * (2 * c.key_dim + c.head_dim);
    // Scores of a few units, so that the softmax is neither flat nor one-hot.
    const Tensor qkv =
        testing::held(testing::random_tensor({c.n, channels, c.height, c.width}, 5, -1.5f, 1.5f), c.fp16);
    ref_ = reference::attention(qkv, AttentionAttrs{c.heads, c.key_dim, c.head_dim});
    qkv_ = testing::on_device(testing::to_nhwc(qkv), c.fp16);
    y_ = cuda::DeviceBuffer((c.fp16 ? ref_.to(DType::kF16) : ref_).nbytes());
  }

  // The kernel's output, back in the reference's layout.
  Tensor result() const {
    const AttentionCase& c = GetParam();
    const Shape nhwc{ref_.dim(0), ref_.dim(2), ref_.dim(3), ref_.dim(1)};
    return testing::to_nchw(testing::from_device(y_, c.fp16 ? DType::kF16 : DType::kF32, nhwc));
  }

  // f32: f32 sums of a few hundred terms in another order than the reference's; fp16: one more rounding
  // of each output (2^-11 relative at most).
  double bound() const { return GetParam().fp16 ? 2e-3 : 1e-5; }

  cuda::Elem elem() const { return GetParam().fp16 ? cuda::Elem::kF16 : cuda::Elem::kF32; }

  Tensor ref_;
  cuda::DeviceBuffer qkv_, y_;
};

TEST_P(CudaAttentionKernelTest, SplitKernelMatchesTheReference) {
  const cuda::AttentionShape shape = shape_of(GetParam());
  const cuda::DeviceBuffer workspace(cuda::attention_workspace_bytes(shape));
  cuda::check(cuda::attention(qkv_.data(), y_.data(), workspace.data(), elem(), shape, nullptr),
              "launching the attention kernel");
  cuda::check(cudaDeviceSynchronize(), "running the attention kernel");
  EXPECT_LE(testing::relative_difference(result(), ref_), bound())
      << cuda::attention_split(shape).splits << " key splits";
}

// The tensor-core kernel, on the shapes it takes (fp16, key_dim 32, head_dim 64). Its weights are rounded
// to fp16 before they multiply the values (2^-11 relative each, averaging out over the keys), within the
// same bound as the other kernels' output rounding.
TEST_P(CudaAttentionKernelTest, TensorCoreKernelMatchesTheReference) {
  const cuda::AttentionShape shape = shape_of(GetParam());
  if (!cuda::attention_mma_fits(elem(), shape)) GTEST_SKIP() << "not a shape the tensor-core kernel takes";
  cuda::check(cuda::attention_mma(qkv_.data(), y_.data(), elem(), shape, nullptr),
              "launching the tensor-core attention kernel");
  cuda::check(cudaDeviceSynchronize(), "running the tensor-core attention kernel");
  EXPECT_LE(testing::relative_difference(result(), ref_), bound());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaAttentionKernelTest,
    ::testing::Values(AttentionCase{1, 20, 20, 2, 32, 64, false},  // YOLOv10n at 640 x 640, batch 1
                      AttentionCase{1, 20, 20, 2, 32, 64, true},
                      AttentionCase{1, 20, 20, 4, 32, 64, true},    // YOLOv10s
                      AttentionCase{8, 20, 20, 2, 32, 64, true},    // one split
                      AttentionCase{32, 20, 20, 2, 32, 64, true},   // YOLOv10n at batch 32: tensor cores
                      AttentionCase{3, 13, 11, 2, 32, 64, true},    // 143 pixels: partial tiles and chunks
                      AttentionCase{2, 1, 1, 2, 32, 64, true},      // one pixel, fp16
                      AttentionCase{2, 7, 9, 2, 32, 64, false},     // 63 pixels
                      AttentionCase{3, 13, 11, 1, 31, 100, false},  // odd key width, 4 values per lane
                      AttentionCase{1, 9, 5, 1, 159, 1, true},      // the widest keys
                      AttentionCase{1, 6, 6, 1, 1, 159, false},     // the widest values
                      AttentionCase{2, 1, 1, 2, 8, 16, false}),     // one pixel
    [](const auto& param_info) { return case_name(param_info.param); });

// Host code only: runs without a GPU.
TEST(CudaAttentionSplitTest, TensorCoresTakeFp16BatchesThatFillTheGpu) {
  const cuda::AttentionShape one{1, 400, 2, 32, 64, 0.17677669f};
  const cuda::AttentionShape batch{32, 400, 2, 32, 64, 0.17677669f};
  const cuda::AttentionShape wide{32, 400, 2, 31, 100, 0.18f};
  EXPECT_FALSE(cuda::attention_uses_mma(cuda::Elem::kF16, one)) << "14 blocks: the split kernel";
  EXPECT_TRUE(cuda::attention_uses_mma(cuda::Elem::kF16, batch)) << "448 blocks";
  EXPECT_FALSE(cuda::attention_uses_mma(cuda::Elem::kF32, batch));
  EXPECT_FALSE(cuda::attention_mma_fits(cuda::Elem::kF16, wide));
}

TEST(CudaAttentionSplitTest, OneImageSpreadsOverTheGpuAndABatchDoesNot) {
  // YOLOv10n at batch 1: 25 query tiles x 2 heads, 13 key chunks -> 5 splits of 3 chunks.
  const cuda::AttentionShape one{1, 400, 2, 32, 64, 0.17677669f};
  EXPECT_EQ(cuda::attention_split(one).splits, 5);
  EXPECT_EQ(cuda::attention_split(one).keys_per_split, 96);
  EXPECT_EQ(cuda::attention_workspace_bytes(one), sizeof(float) * 2 * 5 * 400 * 66);
  const cuda::AttentionShape batch{32, 400, 2, 32, 64, 0.17677669f};
  EXPECT_EQ(cuda::attention_split(batch).splits, 1);
  EXPECT_EQ(cuda::attention_workspace_bytes(batch), 0u);
  // Every split starts inside the image, so each holds at least one key.
  for (const int pixels : {1, 31, 32, 33, 63, 64, 65, 100, 399, 400, 401, 1600}) {
    const cuda::AttentionShape s{1, pixels, 1, 32, 64, 1.0f};
    const cuda::AttentionSplit split = cuda::attention_split(s);
    EXPECT_GE(split.splits, 1) << pixels;
    EXPECT_EQ(split.keys_per_split % 32, 0) << pixels;
    EXPECT_LT((split.splits - 1) * split.keys_per_split, pixels) << pixels;
    EXPECT_GE(split.splits * split.keys_per_split, pixels) << pixels;
  }
}

#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
