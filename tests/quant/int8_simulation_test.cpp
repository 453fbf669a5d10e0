// The int8 simulation on cpu-reference: the rounding and saturation of codes, the weight codes and scales
// the rewrite makes, and an int8 convolution whose every output is worked out by hand below (scales that
// are powers of two keep each step exact, so the expected values are exact too).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference/executor.h"
#include "core/dtype.h"
#include "graph/precision_assignment.h"
#include "quant/calibrator.h"
#include "quant/fake_quant.h"
#include "quant/fp8_rewrite.h"

namespace kiln {
namespace {

TEST(Int8Codes, RoundHalfToEvenAndSaturateToTheInt8Range) {
  EXPECT_EQ(quantize_to_int8(2.5f, 1.0f), 2);
  EXPECT_EQ(quantize_to_int8(3.5f, 1.0f), 4);
  EXPECT_EQ(quantize_to_int8(-2.5f, 1.0f), -2);
  EXPECT_EQ(quantize_to_int8(-0.5f, 1.0f), 0);
  EXPECT_EQ(quantize_to_int8(126.6f, 1.0f), 127);
  EXPECT_EQ(quantize_to_int8(127.5f, 1.0f), 127);  // would round to 128: saturates
  EXPECT_EQ(quantize_to_int8(-128.4f, 1.0f), -128);
  EXPECT_EQ(quantize_to_int8(-1000.0f, 1.0f), -128);
  EXPECT_EQ(quantize_to_int8(std::numeric_limits<float>::infinity(), 1.0f), 127);
  EXPECT_EQ(quantize_to_int8(std::numeric_limits<float>::quiet_NaN(), 1.0f), 0);
  // The scale's reciprocal multiplies: 0.15625 * 16 = 2.5, a tie.
  EXPECT_EQ(quantize_to_int8(0.15625f, 16.0f), 2);
}

TEST(Int8Codes, FakeQuantizationReadsTheCodeBackTimesTheScale) {
  EXPECT_EQ(fake_quantize_int8(0.21875f, 0.0625f), 0.25f);  // 3.5 -> 4
  EXPECT_EQ(fake_quantize_int8(10.0f, 0.0625f), 7.9375f);   // 160 -> 127
  EXPECT_EQ(fake_quantize_int8(-10.0f, 0.0625f), -8.0f);    // -160 -> -128
  EXPECT_TRUE(std::isnan(fake_quantize_int8(std::numeric_limits<float>::quiet_NaN(), 0.0625f)));
}

TEST(Int8Scales, WeightScalesMapEachChannelsAmaxTo127) {
  const Tensor weight =
      Tensor::from_f32({2, 2, 1, 1}, std::vector<float>{1.984375f, -0.5390625f, -3.96875f, 0.046875f});
  const std::vector<float> scales = per_channel_weight_scales(weight, QuantFormat::kInt8);
  ASSERT_EQ(scales.size(), 2u);
  EXPECT_EQ(scales[0], 1.0f / 64.0f);  // 1.984375 = 127 / 64
  EXPECT_EQ(scales[1], 1.0f / 32.0f);  // 3.96875 = 127 / 32
  EXPECT_EQ(scale_for_amax(0.0f, QuantFormat::kInt8), 1.0f / 127.0f);
  EXPECT_EQ(scale_for_amax(254.0f, QuantFormat::kInt8), 2.0f);
}

TEST(Int8Calibration, MaxMapsTheObservedAmaxTo127) {
  AbsHistogram histogram(2048);
  const std::vector<float> values{0.5f, -1.25f, 2.54f};
  histogram.observe(values);
  CalibrationOptions options;
  options.format = QuantFormat::kInt8;
  const CalibrationResult result = choose_amax(histogram, CalibrationMethod::kMax, options);
  EXPECT_EQ(result.amax, 2.54f);
  EXPECT_EQ(result.scale, 2.54f / 127.0f);
}

// A uniform grid loses as much to rounding near zero as near amax, so clipping uniform values never pays
// on it, while E4M3's fine levels near zero make a lower threshold cheaper there: the same histogram gives
// each grid its own threshold.
TEST(Int8Calibration, EntropyAndMseSearchTheInt8Grid) {
  AbsHistogram histogram(2048);
  std::vector<float> values;
  for (int i = 0; i < 20000; ++i) values.push_back(static_cast<float>(i % 1000) / 1000.0f);
  histogram.observe(values);
  CalibrationOptions int8;
  int8.format = QuantFormat::kInt8;
  for (const CalibrationMethod method : {CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    const CalibrationResult on_int8 = choose_amax(histogram, method, int8);
    EXPECT_GE(on_int8.amax, 0.95f * histogram.amax()) << calibration_method_name(method);
    EXPECT_EQ(on_int8.scale, scale_for_amax(on_int8.amax, QuantFormat::kInt8));
  }
}

// y = conv(x, W) + b with 2 input channels, 2 output channels, 1x1 kernel, 3 pixels, in int8:
//   x scale 1/16: channel 0 0.15625, 10, -0.1875 -> codes 2 (2.5, a tie), 127 (saturated), -3;
//                 channel 1 0.21875, -10, 0.03125 -> codes 4 (3.5, a tie), -128 (saturated), 0 (0.5, a tie)
//   W row 0 (127/64, -34.5/64): scale 1/64, codes 127, -34 (a tie); row 1 (-127/32, 1.5/32): scale 1/32,
//   codes -127, 2 (a tie); bias 0.5, -0.25.
//   pixel 0: 127*2 - 34*4 = 118 -> 118/1024 + 0.5;    -127*2 + 2*4 = -246 -> -246/512 - 0.25
//   pixel 1: 127*127 + 34*128 = 20481 -> ... + 0.5;   -127*127 - 2*128 = -16385 -> ... - 0.25
//   pixel 2: -3*127 = -381 -> -381/1024 + 0.5;        381 -> 381/512 - 0.25
TEST(Int8Simulation, AConvolutionSumsCodeProductsExactlyThenDequantizesAndAddsTheBias) {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, 2, 1, 3});
  const ValueId w = graph.add_constant(
      "w", Tensor::from_f32({2, 2, 1, 1}, std::vector<float>{1.984375f, -0.5390625f, -3.96875f, 0.046875f}));
  const ValueId b = graph.add_constant("b", Tensor::from_f32({2}, std::vector<float>{0.5f, -0.25f}));
  const ValueId y = graph.add_node(OpKind::kConv2d, "conv", {x, w, b}, ConvAttrs{});
  graph.mark_output(y);
  const std::vector<Fp8Layer> layers =
      rewrite_to_fp8(graph, {"conv"}, {{{"x", 0.0625f}}}, true, QuantFormat::kInt8);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].weight_scale_min, 1.0f / 64.0f);
  EXPECT_EQ(layers[0].weight_scale_max, 1.0f / 32.0f);
  assign_precision(graph, Precision::kF32);
  EXPECT_EQ(graph.node(*graph.find_node("conv")).precision, Precision::kI8);
  const Node& dequantize = graph.node(*graph.find_node("conv.weight_dequantize"));
  const Tensor codes = graph.value(dequantize.inputs[0]).constant;
  ASSERT_EQ(codes.dtype(), DType::kI8);
  const Tensor widened = codes.to(DType::kF32);
  EXPECT_EQ(std::vector<float>(widened.f32().begin(), widened.f32().end()),
            (std::vector<float>{127.0f, -34.0f, -127.0f, 2.0f}));

  const Tensor input = Tensor::from_f32(
      {1, 2, 1, 3}, std::vector<float>{0.15625f, 10.0f, -0.1875f, 0.21875f, -10.0f, 0.03125f});
  const std::vector<Tensor> out = run_reference(graph, {input});
  const std::vector<float> expected{118.0f / 1024 + 0.5f,  20481.0f / 1024 + 0.5f,  -381.0f / 1024 + 0.5f,
                                    -246.0f / 512 - 0.25f, -16385.0f / 512 - 0.25f, 381.0f / 512 - 0.25f};
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::vector<float>(out[0].f32().begin(), out[0].f32().end()), expected);
}

}  // namespace
}  // namespace kiln
