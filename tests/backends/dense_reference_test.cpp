// global_avg_pool, flatten and linear against explicit sums.
#include <vector>

#include "reference/kernels.h"
#include "core/error.h"
#include "reference_test_util.h"

namespace kiln {
namespace {

using testing::kRelTolerance;
using testing::random_tensor;
using testing::relative_error;

TEST(GlobalAvgPoolReference, MatchesPlaneMeans) {
  const Tensor x = random_tensor({2, 3, 7, 5}, 61);
  const Tensor y = reference::global_avg_pool(x);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 1, 1}));
  std::vector<double> ref(6, 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i) ref[i / 35] += x.f32()[i] / 35.0;
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
}

TEST(GlobalAvgPoolReference, RejectsBadInput) {
  EXPECT_THROW(reference::global_avg_pool(random_tensor({2, 3, 4}, 1)), Error);
  EXPECT_THROW(reference::global_avg_pool(Tensor(DType::kF32, {1, 2, 0, 3})), Error);
}

TEST(FlattenReference, CollapsesTrailingDims) {
  const Tensor x = random_tensor({2, 4, 1, 1}, 62);
  const Tensor y = reference::flatten(x);
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(testing::values(y), testing::values(x));
  const Tensor z = reference::flatten(random_tensor({3, 2, 5, 7}, 63));
  EXPECT_EQ(z.shape(), (Shape{3, 70}));
  EXPECT_EQ(testing::values(z), testing::values(random_tensor({3, 2, 5, 7}, 63)));
  EXPECT_THROW(reference::flatten(random_tensor({5}, 1)), Error);
}

TEST(FlattenReference, OutputIsIndependentOfInput) {
  Tensor x = random_tensor({1, 3, 1, 1}, 64);
  const Tensor y = reference::flatten(x);
  x.mutable_f32()[0] = 42.0f;
  EXPECT_NE(y.f32()[0], 42.0f);
}

TEST(LinearReference, MatchesExplicitSums) {
  const Tensor x = random_tensor({3, 17}, 71);
  const Tensor w = random_tensor({5, 17}, 72);
  const Tensor b = random_tensor({5}, 73);
  for (const Tensor* bias : {static_cast<const Tensor*>(nullptr), &b}) {
    std::vector<double> ref;
    for (std::int64_t n = 0; n < 3; ++n) {
      for (std::int64_t m = 0; m < 5; ++m) {
        double sum = bias != nullptr ? b.f32()[m] : 0.0;
        for (std::int64_t k = 0; k < 17; ++k)
          sum += static_cast<double>(x.f32()[n * 17 + k]) * w.f32()[m * 17 + k];
        ref.push_back(sum);
      }
    }
    const Tensor y = reference::linear(x, w, bias);
    EXPECT_EQ(y.shape(), (Shape{3, 5}));
    EXPECT_LE(relative_error(y, ref), kRelTolerance);
  }
}

TEST(LinearReference, HandComputedCase) {
  const Tensor x = Tensor::from_f32({1, 2}, std::vector<float>{1, 2});
  const Tensor w = Tensor::from_f32({2, 2}, std::vector<float>{3, 4, 5, 6});
  const Tensor b = Tensor::from_f32({2}, std::vector<float>{0.5f, -1});
  EXPECT_EQ(testing::values(reference::linear(x, w, &b)), (std::vector<float>{11.5f, 16}));
}

TEST(LinearReference, RejectsBadArguments) {
  const Tensor x = random_tensor({2, 4}, 1);
  const Tensor w = random_tensor({3, 4}, 2);
  EXPECT_THROW(reference::linear(random_tensor({2, 4, 1, 1}, 1), w, nullptr), Error);
  EXPECT_THROW(reference::linear(x, random_tensor({3, 5}, 2), nullptr), Error);
  EXPECT_THROW(reference::linear(x, random_tensor({12}, 2), nullptr), Error);
  const Tensor bad_bias = random_tensor({4}, 3);
  EXPECT_THROW(reference::linear(x, w, &bad_bias), Error);
  EXPECT_THROW(reference::linear(x, w.to(DType::kBF16), nullptr), Error);
}

}  // namespace
}  // namespace kiln
