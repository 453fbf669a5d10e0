// batch_norm, activation and add against their closed forms.
#include <cmath>
#include <limits>
#include <vector>

#include "reference/kernels.h"
#include "core/error.h"
#include "reference_test_util.h"

namespace kiln {
namespace {

using testing::kRelTolerance;
using testing::random_tensor;
using testing::relative_error;

double relu(double x) { return x > 0.0 ? x : 0.0; }
double sigmoid(double x) { return std::exp(x) / (1.0 + std::exp(x)); }  // a different, equal form
double silu(double x) { return x * sigmoid(x); }

TEST(BatchNormReference, MatchesClosedForm) {
  const Tensor x = random_tensor({2, 5, 4, 3}, 31, -3.0f, 3.0f);
  const Tensor gamma = random_tensor({5}, 32, 0.5f, 2.0f);
  const Tensor beta = random_tensor({5}, 33);
  const Tensor mean = random_tensor({5}, 34);
  const Tensor var = random_tensor({5}, 35, 0.1f, 4.0f);
  const float eps = 1e-3f;
  const Tensor y = reference::batch_norm(x, gamma, beta, mean, var, eps);
  ASSERT_EQ(y.shape(), x.shape());
  std::vector<double> ref;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t c = i / 12 % 5;
    ref.push_back((x.f32()[i] - static_cast<double>(mean.f32()[c])) /
                      std::sqrt(static_cast<double>(var.f32()[c]) + static_cast<double>(eps)) *
                      gamma.f32()[c] +
                  beta.f32()[c]);
  }
  EXPECT_LE(relative_error(y, ref), kRelTolerance);
}

TEST(BatchNormReference, AcceptsRankTwo) {
  const Tensor x = Tensor::from_f32({2, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor gamma = Tensor::from_f32({2}, std::vector<float>{2, 1});
  const Tensor beta = Tensor::from_f32({2}, std::vector<float>{0, 1});
  const Tensor mean = Tensor::from_f32({2}, std::vector<float>{1, 0});
  const Tensor var = Tensor::from_f32({2}, std::vector<float>{4, 1});
  // Channel 0: (x - 1) / 2 * 2; channel 1: x + 1 (epsilon 0).
  EXPECT_EQ(testing::values(reference::batch_norm(x, gamma, beta, mean, var, 0.0f)),
            (std::vector<float>{0, 3, 2, 5}));
}

TEST(BatchNormReference, RejectsBadArguments) {
  const Tensor x = random_tensor({1, 3, 2, 2}, 1);
  const Tensor p = random_tensor({3}, 2, 0.5f, 1.0f);
  const Tensor wrong = random_tensor({4}, 2, 0.5f, 1.0f);
  EXPECT_THROW(reference::batch_norm(x, wrong, p, p, p, 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(x, p, wrong, p, p, 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(x, p, p, wrong, p, 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(x, p, p, p, wrong, 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(x, p, p, p, p.reshaped({3, 1}), 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(random_tensor({3}, 1), p, p, p, p, 1e-5f), Error);
  EXPECT_THROW(reference::batch_norm(x.to(DType::kF16), p, p, p, p, 1e-5f), Error);
}

TEST(ActivationReference, MatchesClosedForms) {
  Tensor x = random_tensor({3, 4, 5, 6}, 41, -8.0f, 8.0f);
  // Extremes that overflow a naive exp(-x) in fp32.
  x.mutable_f32()[0] = -100.0f;
  x.mutable_f32()[1] = 100.0f;
  x.mutable_f32()[2] = -700.0f;
  const std::pair<Activation, double (*)(double)> cases[] = {
      {Activation::kRelu, relu}, {Activation::kSilu, silu}, {Activation::kSigmoid, sigmoid}};
  for (const auto& [act, form] : cases) {
    const Tensor y = reference::activation(x, act);
    std::vector<double> ref;
    for (const float v : x.f32()) ref.push_back(form(v));
    EXPECT_LE(relative_error(y, ref), kRelTolerance) << activation_name(act);
    for (const float v : y.f32()) EXPECT_FALSE(std::isnan(v)) << activation_name(act);
  }
  EXPECT_EQ(testing::values(reference::activation(x, Activation::kNone)), testing::values(x));
}

TEST(ActivationReference, HandValues) {
  const Tensor x = Tensor::from_f32({4}, std::vector<float>{-2, 0, 3, -1000});
  EXPECT_EQ(testing::values(reference::activation(x, Activation::kRelu)), (std::vector<float>{0, 0, 3, 0}));
  const auto s = testing::values(reference::activation(x, Activation::kSigmoid));
  EXPECT_FLOAT_EQ(s[1], 0.5f);
  EXPECT_FLOAT_EQ(s[2], static_cast<float>(1.0 / (1.0 + std::exp(-3.0))));
  EXPECT_EQ(s[3], 0.0f);
  const auto si = testing::values(reference::activation(x, Activation::kSilu));
  EXPECT_EQ(si[1], 0.0f);
  EXPECT_FLOAT_EQ(si[0], static_cast<float>(-2.0 / (1.0 + std::exp(2.0))));
  EXPECT_EQ(si[3], 0.0f);
}

TEST(ActivationReference, ReluPassesNaN) {
  const Tensor x = Tensor::from_f32({1}, std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(std::isnan(reference::activation(x, Activation::kRelu).f32()[0]));
}

TEST(AddReference, MatchesSumThenActivation) {
  const Tensor a = random_tensor({2, 3, 4, 5}, 51, -2.0f, 2.0f);
  const Tensor b = random_tensor({2, 3, 4, 5}, 52, -2.0f, 2.0f);
  const std::pair<Activation, double (*)(double)> cases[] = {{Activation::kNone, [](double v) { return v; }},
                                                             {Activation::kRelu, relu},
                                                             {Activation::kSilu, silu},
                                                             {Activation::kSigmoid, sigmoid}};
  for (const auto& [act, form] : cases) {
    std::vector<double> ref;
    for (std::int64_t i = 0; i < a.numel(); ++i)
      ref.push_back(form(static_cast<double>(a.f32()[i]) + b.f32()[i]));
    EXPECT_LE(relative_error(reference::add(a, b, act), ref), kRelTolerance) << activation_name(act);
  }
}

TEST(AddReference, RejectsMismatchedShapes) {
  const Tensor a = random_tensor({1, 3, 4, 4}, 1);
  EXPECT_THROW(reference::add(a, random_tensor({1, 3, 4, 5}, 2), Activation::kNone), Error);
  EXPECT_THROW(reference::add(a, random_tensor({3, 4, 4}, 2), Activation::kNone), Error);
  EXPECT_THROW(reference::add(a, a.to(DType::kF16), Activation::kNone), Error);
}

TEST(ChannelScaleReference, ScalesEveryPixelOfAChannel) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 61, -2.0f, 2.0f);
  const Tensor gate = random_tensor({2, 3, 1, 1}, 62, 0.0f, 1.0f);
  std::vector<double> ref;
  for (std::int64_t i = 0; i < x.numel(); ++i)
    ref.push_back(static_cast<double>(x.f32()[i]) * gate.f32()[i / 20]);
  EXPECT_LE(relative_error(reference::channel_scale(x, gate), ref), kRelTolerance);
}

TEST(ChannelScaleReference, RejectsBadGates) {
  const Tensor x = random_tensor({2, 3, 4, 4}, 1);
  EXPECT_THROW(reference::channel_scale(x, random_tensor({1, 3, 1, 1}, 2)), Error);  // gate per image
  EXPECT_THROW(reference::channel_scale(x, random_tensor({2, 3}, 2)), Error);
  EXPECT_THROW(reference::channel_scale(x, random_tensor({2, 3, 4, 4}, 2)), Error);
  EXPECT_THROW(reference::channel_scale(random_tensor({2, 3}, 1), random_tensor({2, 3, 1, 1}, 2)), Error);
}

}  // namespace
}  // namespace kiln
