// Calibration of int8 depthwise inputs channel by channel: each channel's threshold is what its
// calibrator chooses from that channel's values alone, for every calibrator, and a calibration cache must
// hold each tensor the way the build quantizes it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "quant/activation_calibration.h"
#include "quant/fake_quant.h"
#include "quant/input_scales.h"

namespace kiln {
namespace {

constexpr std::int64_t kChannels = 3;

// y = conv1x1(x) scaling channel c by 1, 1/50 and 20 (so the channels' ranges differ by 10^3), read by a
// depthwise convolution.
Graph scaled_channels() {
  Graph graph;
  const ValueId x = graph.add_input("x", {1, kChannels, 6, 6});
  std::vector<float> w(kChannels * kChannels, 0.0f);
  const std::vector<float> gains{1.0f, 0.02f, 20.0f};
  for (std::int64_t c = 0; c < kChannels; ++c) w[static_cast<std::size_t>(c * kChannels + c)] = gains[c];
  const ValueId wv = graph.add_constant("w", Tensor::from_f32({kChannels, kChannels, 1, 1}, w));
  const ValueId y = graph.add_node(OpKind::kConv2d, "mix", {x, wv}, ConvAttrs{});
  ConvAttrs dw;
  dw.groups = kChannels;
  const ValueId dw_w =
      graph.add_constant("dw_w", Tensor::from_f32({kChannels, 1, 1, 1}, std::vector<float>(kChannels, 1.0f)));
  graph.mark_output(graph.add_node(OpKind::kConv2d, "dw", {y, dw_w}, dw));
  return graph;
}

Tensor image(std::uint32_t seed) {
  Tensor t(DType::kF32, {1, kChannels, 6, 6});
  std::uint32_t state = seed;
  for (float& v : t.mutable_f32()) {
    state = state * 1664525u + 1013904223u;
    // A heavy tail, so that the calibrators choose different thresholds.
    const float u = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    v = u * u * u * 8.0f;
  }
  return t;
}

TEST(Int8ChannelCalibration, EachChannelsThresholdIsChosenFromItsOwnValues) {
  const Graph graph = scaled_channels();
  const ValueId y = graph.node(*graph.find_node("dw")).inputs[0];
  ActivationCalibration calibration(graph, {y}, "cpu-reference", 1, {y});
  std::vector<AbsHistogram> expected(kChannels);
  const std::vector<float> gains{1.0f, 0.02f, 20.0f};
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    const Tensor x = image(seed);
    calibration.observe(x);
    for (std::int64_t c = 0; c < kChannels; ++c) {
      std::vector<float> values;
      for (const float v : x.f32().subspan(static_cast<std::size_t>(c * 36), 36))
        values.push_back(v * gains[c]);
      expected[static_cast<std::size_t>(c)].observe(values);
    }
  }
  ASSERT_TRUE(calibration.observed_per_channel("mix"));
  CalibrationOptions options;
  options.format = QuantFormat::kInt8;
  for (const CalibrationMethod method : {CalibrationMethod::kMax, CalibrationMethod::kPercentile,
                                         CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    SCOPED_TRACE(calibration_method_name(method));
    const std::vector<CalibrationResult> channels = calibration.choose_channels(method, options, "mix");
    ASSERT_EQ(channels.size(), static_cast<std::size_t>(kChannels));
    for (std::size_t c = 0; c < channels.size(); ++c) {
      const CalibrationResult alone = choose_amax(expected[c], method, options);
      EXPECT_EQ(channels[c].amax, alone.amax) << "channel " << c;
      EXPECT_EQ(channels[c].scale, alone.scale) << "channel " << c;
    }
    if (method == CalibrationMethod::kMax) {
      for (std::size_t c = 0; c < channels.size(); ++c)
        EXPECT_EQ(channels[c].scale, expected[c].amax() / 127.0f);
      EXPECT_GT(channels[2].scale, 500.0f * channels[1].scale);  // one scale would have starved channel 1
    }
  }
  // The tensor as a whole is observed too, and a tensor not observed per channel says so.
  EXPECT_EQ(calibration.histogram("mix").amax(), expected[2].amax());
  ActivationCalibration whole(graph, {y}, "cpu-reference", 1);
  whole.observe(image(1));
  EXPECT_FALSE(whole.observed_per_channel("mix"));
  EXPECT_THROW(whole.choose_channels(CalibrationMethod::kMax, options, "mix"), Error);
}

std::string cache_error(const std::vector<ValueId>& per_channel, const ActivationScales& cache) {
  const Graph graph = scaled_channels();
  const ValueId y = graph.node(*graph.find_node("dw")).inputs[0];
  try {
    cached_input_scales(graph, {y}, per_channel, cache);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Int8ChannelCalibration, ACacheMustHoldEachTensorAsTheBuildQuantizesIt) {
  const Graph graph = scaled_channels();
  const ValueId y = graph.node(*graph.find_node("dw")).inputs[0];
  const InputScales good = cached_input_scales(graph, {y}, {y}, {{}, {{"mix", {0.5f, 0.25f, 2.0f}}}});
  EXPECT_EQ(good.scales.channels.at("mix"), (std::vector<float>{0.5f, 0.25f, 2.0f}));
  EXPECT_EQ(good.tensors.at("mix").at("channels"), 3);
  EXPECT_EQ(good.tensors.at("mix").at("scale_min"), 0.25f);

  EXPECT_NE(
      cache_error({y}, {{{"mix", 0.5f}}, {}})
          .find(
              "the calibration cache holds one scale for 'mix', which this int8 build quantizes per channel"),
      std::string::npos);
  EXPECT_NE(cache_error({y}, {{}, {{"mix", {0.5f, 0.25f}}}})
                .find("the calibration cache holds 2 channel scales for 'mix', which has 3 channels"),
            std::string::npos);
  EXPECT_NE(cache_error({}, {{}, {{"mix", {0.5f, 0.25f, 2.0f}}}})
                .find("holds per-channel scales for 'mix', which this build quantizes per tensor"),
            std::string::npos);
  EXPECT_NE(cache_error({y}, {}).find("has no scales for 'mix'"), std::string::npos);
}

}  // namespace
}  // namespace kiln
