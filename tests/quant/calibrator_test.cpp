// The |x| histogram, the four activation calibrators, weight scales and E4M3 fake quantization.
//
// What the calibrators pick on E4M3 differs from INT8 intuition: E4M3 keeps about the same relative
// precision from 2^-6 * scale up to 448 * scale, so lowering the threshold makes the bulk of a
// distribution no more precise; it only clips. MSE therefore stays near amax even with huge outliers
// (the brute-force errors below confirm that clipping them costs more), while entropy, whose KL barely
// weighs a handful of outliers, may clip them but never the bulk.
#include "quant/calibrator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "quant/fake_quant.h"
#include "quant/histogram.h"

namespace kiln {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Deterministic on every platform: mt19937's output is specified, unlike std::normal_distribution's.
double uniform_open(std::mt19937& rng) { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; }

std::vector<float> gaussian(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> values(n);
  for (auto& value : values) {
    const double radius = std::sqrt(-2.0 * std::log(uniform_open(rng)));
    value = static_cast<float>(radius * std::cos(2.0 * std::numbers::pi * uniform_open(rng)));
  }
  return values;
}

std::vector<float> laplace(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> values(n);
  for (auto& value : values) {
    const double u = uniform_open(rng) - 0.5;
    value = static_cast<float>((u < 0 ? 1.0 : -1.0) * std::log(1.0 - 2.0 * std::fabs(u)));
  }
  return values;
}

std::vector<float> uniform(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
  return values;
}

// Ten outliers from `low` in steps of `step`, alternating in sign, spread over the samples.
std::vector<float> with_outliers(std::vector<float> values, float low, float step) {
  for (int k = 0; k < 10; ++k) {
    values[static_cast<std::size_t>(k) * (values.size() / 10)] =
        (k % 2 == 0 ? 1.0f : -1.0f) * (low + step * static_cast<float>(k));
  }
  return values;
}

float amax_of(std::span<const float> values) {
  float amax = 0.0f;
  for (const float value : values) amax = std::max(amax, std::fabs(value));
  return amax;
}

// As a calibration loop would: one observe() per "image" of 1000 values.
AbsHistogram histogram_of(std::span<const float> values) {
  AbsHistogram histogram;
  for (std::size_t i = 0; i < values.size(); i += 1000) {
    histogram.observe(values.subspan(i, std::min<std::size_t>(1000, values.size() - i)));
  }
  return histogram;
}

// Mean squared error of fake quantization with threshold T over the raw samples, written out directly.
double raw_error(std::span<const float> values, float threshold) {
  const float scale = threshold / 448.0f;
  double error = 0.0;
  for (const float value : values) {
    const double difference =
        static_cast<double>(value) - static_cast<double>(round_to_e4m3(value / scale) * scale);
    error += difference * difference;
  }
  return error / static_cast<double>(values.size());
}

TEST(AbsHistogram, GrowthKeepsExactCountsWhenValuesArriveInIncreasingMagnitude) {
  std::vector<float> values;
  for (int exponent = -20; exponent <= 20; ++exponent) {
    for (const float mantissa : {1.0f, 1.3f, 1.7f, 1.99f}) values.push_back(std::ldexp(mantissa, exponent));
  }
  AbsHistogram growing;
  for (const float value : values) growing.observe(std::span(&value, 1));  // grows ~40 times
  AbsHistogram at_once;
  at_once.observe(values);
  std::vector<float> reversed(values.rbegin(), values.rend());
  AbsHistogram shrinking;
  for (const float value : reversed) shrinking.observe(std::span(&value, 1));

  const float amax = std::ldexp(1.99f, 20);
  EXPECT_EQ(growing.amax(), amax);
  EXPECT_EQ(growing.count(), static_cast<std::int64_t>(values.size()));
  EXPECT_GT(growing.range(), amax);
  EXPECT_LE(growing.range(), 2.0 * amax);
  int exponent = 0;
  EXPECT_EQ(std::frexp(growing.bin_width(), &exponent), 0.5) << "the width is a power of two";
  EXPECT_EQ(growing.counts(), at_once.counts());
  EXPECT_EQ(growing.counts(), shrinking.counts());
  EXPECT_EQ(growing.bin_width(), at_once.bin_width());

  // Every value in bin floor(|x| / final width).
  std::vector<std::int64_t> expected(growing.bin_count(), 0);
  for (const float value : values) ++expected[static_cast<std::size_t>(value / growing.bin_width())];
  EXPECT_EQ(growing.counts(), expected);
}

TEST(AbsHistogram, CountsNaNAndInfinityApartAndZerosInTheFirstBin) {
  AbsHistogram histogram(16);
  const std::vector<float> zeros = {0.0f, -0.0f, 0.0f};
  histogram.observe(zeros);
  EXPECT_EQ(histogram.bin_width(), 0.0);
  EXPECT_EQ(histogram.amax(), 0.0f);
  const std::vector<float> mixed = {kNaN, -kInf, 3.0f, kInf, -5.0f, kNaN, kNaN, 0.0f};
  histogram.observe(mixed);
  EXPECT_EQ(histogram.nan_count(), 3);
  EXPECT_EQ(histogram.inf_count(), 2);
  EXPECT_EQ(histogram.count(), 6);
  EXPECT_EQ(histogram.amax(), 5.0f);
  EXPECT_EQ(histogram.bin_width(), 0.5);  // 16 bins of 0.5 cover 5; 16 of 0.25 would not
  EXPECT_EQ(histogram.counts()[0], 4);
  EXPECT_EQ(histogram.counts()[6], 1);
  EXPECT_EQ(histogram.counts()[10], 1);
  EXPECT_THROW(AbsHistogram(15), Error);
  EXPECT_THROW(AbsHistogram(16, 0.0), Error);
}

TEST(Calibrator, MethodNamesRoundTrip) {
  for (const auto method : {CalibrationMethod::kMax, CalibrationMethod::kPercentile,
                            CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    EXPECT_EQ(calibration_method_from_name(calibration_method_name(method)), method);
  }
  EXPECT_EQ(calibration_method_name(CalibrationMethod::kMse), "mse");
  EXPECT_EQ(calibration_method_from_name("MAX"), std::nullopt);
}

TEST(Calibrator, EmptyFailsAndAllZeroGetsTheDocumentedScale) {
  AbsHistogram histogram;
  EXPECT_THROW(choose_amax(histogram, CalibrationMethod::kMax), Error);
  const std::vector<float> not_finite = {kNaN, kInf};
  histogram.observe(not_finite);
  EXPECT_THROW(choose_amax(histogram, CalibrationMethod::kEntropy), Error);
  const std::vector<float> zeros(100, 0.0f);
  histogram.observe(zeros);
  for (const auto method : {CalibrationMethod::kMax, CalibrationMethod::kPercentile,
                            CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    const CalibrationResult result = choose_amax(histogram, method);
    EXPECT_TRUE(result.all_zero);
    EXPECT_EQ(result.amax, 0.0f);
    EXPECT_EQ(result.scale, 1.0f / 448.0f);
  }
}

TEST(Calibrator, MaxIsTheExactAmax) {
  std::vector<float> values = gaussian(10000, 7);
  values[1234] = -3.14159f * 3.0f;
  const CalibrationResult result = choose_amax(histogram_of(values), CalibrationMethod::kMax);
  EXPECT_EQ(result.amax, 3.14159f * 3.0f);
  EXPECT_EQ(result.scale, 3.14159f * 3.0f / 448.0f);
  EXPECT_FALSE(result.all_zero);
}

TEST(Calibrator, PercentileOfAUniformIsWithinOneBinOfTheTrueQuantile) {
  const std::vector<float> values = uniform(1000000);  // i / N
  const AbsHistogram histogram = histogram_of(values);
  for (const double percentile : {50.0, 90.0, 99.0, 99.99}) {
    CalibrationOptions options;
    options.percentile = percentile;
    const float threshold = choose_amax(histogram, CalibrationMethod::kPercentile, options).amax;
    EXPECT_NEAR(threshold, percentile / 100.0, histogram.bin_width()) << percentile;
  }
  CalibrationOptions all;
  all.percentile = 100.0;
  EXPECT_EQ(choose_amax(histogram, CalibrationMethod::kPercentile, all).amax, histogram.amax());
  all.percentile = 0.0;
  EXPECT_THROW(choose_amax(histogram, CalibrationMethod::kPercentile, all), Error);
}

struct Case {
  const char* name;
  std::vector<float> values;
  float bulk_amax;  // amax without the outliers
};

std::vector<Case> outlier_cases() {
  std::vector<Case> cases;
  cases.push_back(
      {"gaussian + outliers 60..96 sigma", with_outliers(gaussian(1000000, 1), 60.0f, 4.0f), 0.0f});
  cases.push_back({"laplace + outliers 200..290 b", with_outliers(laplace(1000000, 2), 200.0f, 10.0f), 0.0f});
  for (auto& c : cases) {
    std::vector<float> bulk = c.values;
    for (auto& value : bulk) value = std::fabs(value) >= 60.0f ? 0.0f : value;
    c.bulk_amax = amax_of(bulk);
  }
  return cases;
}

TEST(Calibrator, EntropyKeepsTheBulkAndMseKeepsTheOutliers) {
  for (const auto& c : outlier_cases()) {
    SCOPED_TRACE(c.name);
    const AbsHistogram histogram = histogram_of(c.values);
    const float entropy = choose_amax(histogram, CalibrationMethod::kEntropy).amax;
    const float mse = choose_amax(histogram, CalibrationMethod::kMse).amax;
    EXPECT_GT(entropy, c.bulk_amax);
    EXPECT_LE(entropy, histogram.amax() + histogram.bin_width());
    // Clipping the outliers would only add error (see the brute-force test below), so MSE stays near amax.
    EXPECT_GT(mse, 0.9f * histogram.amax());
    EXPECT_LE(mse, histogram.range());
  }
}

TEST(Calibrator, UniformCalibratesNearItsMax) {
  const AbsHistogram histogram = histogram_of(uniform(1000000));
  EXPECT_GT(choose_amax(histogram, CalibrationMethod::kEntropy).amax, 0.95f);
  EXPECT_LE(choose_amax(histogram, CalibrationMethod::kEntropy).amax, 1.0f);
  EXPECT_GT(choose_amax(histogram, CalibrationMethod::kMse).amax, 0.95f);
  EXPECT_LE(choose_amax(histogram, CalibrationMethod::kMse).amax, 1.0f);
}

TEST(Calibrator, MseBeatsAmaxAndAQuarterOfItOnTheRawSamples) {
  std::vector<Case> cases = outlier_cases();
  cases.push_back({"gaussian", gaussian(1000000, 1), 0.0f});
  cases.push_back({"uniform", uniform(1000000), 0.0f});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const AbsHistogram histogram = histogram_of(c.values);
    const float chosen = choose_amax(histogram, CalibrationMethod::kMse).amax;
    const double error = raw_error(c.values, chosen);
    EXPECT_LT(error, raw_error(c.values, histogram.amax()));
    EXPECT_LT(error, raw_error(c.values, histogram.amax() / 4.0f));
  }
}

TEST(WeightScales, PerChannelAndPerTensorFromTheExactAmax) {
  // [3 output channels, 2, 2]: amax 4.48, all zero, 896 (negative).
  const std::vector<float> values = {1.0f, -4.48f, 2.0f, 0.5f, 0, 0, 0, 0, 3.0f, -896.0f, 0.25f, 100.0f};
  const Tensor weight = Tensor::from_f32({3, 2, 2}, values);
  const std::vector<float> scales = per_channel_weight_scales(weight);
  ASSERT_EQ(scales.size(), 3u);
  EXPECT_EQ(scales[0], 4.48f / 448.0f);
  EXPECT_EQ(scales[1], 1.0f / 448.0f);
  EXPECT_EQ(scales[2], 2.0f);
  EXPECT_EQ(per_tensor_weight_scale(weight), 2.0f);
  EXPECT_EQ(per_channel_weight_scales(weight.to(DType::kF16))[2], 2.0f);

  const std::vector<float> bad = {1.0f, kNaN};
  EXPECT_THROW(per_channel_weight_scales(Tensor::from_f32({2, 1}, bad)), Error);
  EXPECT_THROW(per_tensor_weight_scale(Tensor::from_f32({2}, bad)), Error);
}

TEST(FakeQuantize, MatchesHandComputedE4M3Values) {
  struct Expected {
    float in;
    float out;
  };
  const float tiny = std::ldexp(1.0f, -9);  // the smallest E4M3 subnormal
  const Expected expected[] = {
      {1.0625f, 1.0f},   // halfway between 1 and 1.125: ties to the even mantissa
      {1.1875f, 1.25f},  // halfway between 1.125 and 1.25: even is 1.25
      {0.3f, 0.3125f},   // steps of 2^-5 in [0.25, 0.5)
      {896.0f, 448.0f},  // saturates
      {-1000.0f, -448.0f},
      {kInf, 448.0f},
      {tiny, tiny},
      {tiny / 2.0f, 0.0f},                // halfway between 0 and 2^-9: ties to zero
      {3.0f * tiny / 2.0f, 2.0f * tiny},  // halfway between 2^-9 and 2^-8: ties to 2^-8
  };
  for (const auto& e : expected) EXPECT_EQ(fake_quantize(e.in, 1.0f), e.out) << e.in;

  std::vector<float> activations = {0.53125f, 1000.0f, -0.3f * 2.0f, kNaN};
  fake_quantize_inplace(activations, 0.5f);  // x / 0.5 -> 1.0625, 2000, -1.2, NaN
  EXPECT_EQ(activations[0], 0.5f);
  EXPECT_EQ(activations[1], 224.0f);
  EXPECT_EQ(activations[2], -0.625f);  // -1.2 -> -1.25
  EXPECT_TRUE(std::isnan(activations[3]));
  EXPECT_THROW(fake_quantize_inplace(activations, 0.0f), Error);

  const std::vector<float> values = {1.0625f, 896.0f, 0.3f, 1.0625f, 1000.0f, 0.3f};
  const Tensor quantized = fake_quantize_per_channel(Tensor::from_f32({2, 3}, values), {1.0f, 2.0f});
  const std::vector<float> want = {1.0f, 448.0f, 0.3125f, 1.0f, 896.0f, 0.3125f};
  EXPECT_EQ(std::vector<float>(quantized.f32().begin(), quantized.f32().end()), want);
  EXPECT_THROW(fake_quantize_per_channel(Tensor::from_f32({2, 3}, values), {1.0f}), Error);
}

}  // namespace
}  // namespace kiln
