// Per-channel int8 input scales for depthwise convolutions: which tensors get them, the rewrite that
// gives them to the quantize point, and a depthwise convolution whose every output is worked out by hand
// below (scales that are powers of two keep each step exact, so the expected values are exact too).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "graph/precision_assignment.h"
#include "quant/depthwise_inputs.h"
#include "quant/fp8_rewrite.h"
#include "reference/executor.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

ConvAttrs depthwise(std::int64_t channels, std::int64_t kernel_w) {
  ConvAttrs attrs;
  attrs.kernel = {1, kernel_w};
  attrs.groups = channels;
  return attrs;
}

// x [1, 2, 1, 4] through a depthwise 1x2 convolution (2 channels) with a bias; the quantize point's
// values are an output too.
struct DepthwiseGraph {
  Graph graph;
  DepthwiseGraph() {
    const ValueId x = graph.add_input("x", {1, 2, 1, 4});
    const ValueId w = graph.add_constant(
        "w",
        Tensor::from_f32({2, 1, 1, 2}, std::vector<float>{1.984375f, -0.5390625f, -3.96875f, 0.046875f}));
    const ValueId b = graph.add_constant("b", Tensor::from_f32({2}, std::vector<float>{0.5f, -0.25f}));
    graph.mark_output(graph.add_node(OpKind::kConv2d, "dw", {x, w, b}, depthwise(2, 2)));
  }
};

// x channel 0 with scale 1/16: 0.15625, 10, -0.21875, 0.03125 -> codes 2 (2.5, a tie), 127 (160,
//   saturated), -4 (-3.5, a tie), 0 (0.5, a tie);
// x channel 1 with scale 1/4: 0.625, -40, 0.875, -0.375 -> codes 2 (a tie), -128 (-160, saturated), 4 (a
//   tie), -2 (-1.5, a tie). One scale for both (1/4, the wider channel's) would leave channel 0 the codes
//   1, 40, -1, 0.
// W channel 0 (127/64, -34.5/64): scale 1/64, codes 127, -34 (a tie); channel 1 (-127/32, 1.5/32): scale
//   1/32, codes -127, 2 (a tie); bias 0.5, -0.25.
// Channel 0, dequantized by 1/16 x 1/64 = 1/1024:
//   2*127 - 127*34 = -4064;  127*127 + 4*34 = 16265;  -4*127 + 0 = -508
// Channel 1, dequantized by 1/4 x 1/32 = 1/128:
//   -2*127 - 128*2 = -510;  128*127 + 4*2 = 16264;  -4*127 - 2*2 = -512
TEST(Int8Depthwise, EachChannelIsQuantizedAndDequantizedWithItsOwnScale) {
  DepthwiseGraph g;
  const std::vector<Fp8Layer> layers = rewrite_to_fp8(
      g.graph, {"dw"}, ActivationScales{{}, {{"x", {0.0625f, 0.25f}}}}, true, QuantFormat::kInt8);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_TRUE(layers[0].per_channel_input);
  EXPECT_EQ(layers[0].activation_scale, 0.25f);  // the largest channel scale
  EXPECT_EQ(layers[0].activation_scale_min, 0.0625f);
  const Node& point = g.graph.node(*g.graph.find_node("x.quantize"));
  EXPECT_EQ(point.attr<QuantizeAttrs>().channel_scales, (std::vector<float>{0.0625f, 0.25f}));
  EXPECT_EQ(point.attr<QuantizeAttrs>().scale, 0.25f);
  g.graph.mark_output(point.output);
  assign_precision(g.graph, Precision::kF32);

  const Tensor input = Tensor::from_f32({1, 2, 1, 4}, std::vector<float>{0.15625f, 10.0f, -0.21875f, 0.03125f,
                                                                         0.625f, -40.0f, 0.875f, -0.375f});
  const std::vector<Tensor> out = run_reference(g.graph, {input});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> quantized{0.125f, 7.9375f, -0.25f, 0.0f, 0.5f, -32.0f, 1.0f, -0.5f};
  EXPECT_EQ(std::vector<float>(out[1].f32().begin(), out[1].f32().end()), quantized);
  const std::vector<float> expected{-4064.0f / 1024 + 0.5f, 16265.0f / 1024 + 0.5f, -508.0f / 1024 + 0.5f,
                                    -510.0f / 128 - 0.25f,  16264.0f / 128 - 0.25f, -512.0f / 128 - 0.25f};
  EXPECT_EQ(std::vector<float>(out[0].f32().begin(), out[0].f32().end()), expected);
}

// x is read by a depthwise and a dense convolution, y by a depthwise one only, z (the dense one's output)
// by a depthwise and a grouped (not depthwise) one.
struct MixedReaders {
  Graph graph;
  MixedReaders() {
    const ValueId x = graph.add_input("x", {1, 4, 5, 5});
    const auto weight = [&](const std::string& name, Shape shape) {
      return graph.add_constant(name, Tensor(DType::kF32, std::move(shape)));
    };
    ConvAttrs dense;
    const ValueId y =
        graph.add_node(OpKind::kConv2d, "dw_x", {x, weight("w1", {4, 1, 1, 1})}, depthwise(4, 1));
    const ValueId z = graph.add_node(OpKind::kConv2d, "dense_x", {x, weight("w2", {4, 4, 1, 1})}, dense);
    const ValueId a =
        graph.add_node(OpKind::kConv2d, "dw_y", {y, weight("w3", {4, 1, 1, 1})}, depthwise(4, 1));
    const ValueId b =
        graph.add_node(OpKind::kConv2d, "dw_z", {z, weight("w4", {4, 1, 1, 1})}, depthwise(4, 1));
    ConvAttrs grouped;
    grouped.groups = 2;
    const ValueId c = graph.add_node(OpKind::kConv2d, "grouped_z", {z, weight("w5", {4, 2, 1, 1})}, grouped);
    for (const ValueId out : {a, b, c}) graph.mark_output(out);
  }
  std::vector<std::string> names(const std::vector<ValueId>& values) const {
    std::vector<std::string> out;
    for (const ValueId value : values) out.push_back(graph.value(value).name);
    return out;
  }
};

TEST(Int8Depthwise, OnlyTensorsEveryQuantizedReaderOfWhichIsDepthwiseGoPerChannel) {
  const MixedReaders m;
  EXPECT_TRUE(is_depthwise_conv(m.graph, m.graph.node(*m.graph.find_node("dw_x"))));
  EXPECT_FALSE(is_depthwise_conv(m.graph, m.graph.node(*m.graph.find_node("dense_x"))));
  EXPECT_FALSE(is_depthwise_conv(m.graph, m.graph.node(*m.graph.find_node("grouped_z"))));
  const std::vector<std::string> all{"dw_x", "dense_x", "dw_y", "dw_z", "grouped_z"};
  EXPECT_EQ(m.names(depthwise_only_inputs(m.graph, all)), (std::vector<std::string>{"dw_x"}));
  // A recipe that leaves the dense readers out: x and z are read by depthwise layers only.
  EXPECT_EQ(m.names(depthwise_only_inputs(m.graph, {"dw_x", "dw_y", "dw_z"})),
            (std::vector<std::string>{"x", "dw_x", "dense_x"}));
  EXPECT_EQ(m.names(depthwise_read_inputs(m.graph, all)), (std::vector<std::string>{"x", "dw_x", "dense_x"}));
  EXPECT_EQ(depthwise_input_scales_from_name("per-channel"), DepthwiseInputScales::kPerChannel);
  EXPECT_EQ(depthwise_input_scales_from_name("per-tensor"), DepthwiseInputScales::kPerTensor);
  EXPECT_FALSE(depthwise_input_scales_from_name("per-row").has_value());
}

TEST(Int8Depthwise, TheRewriteRefusesChannelScalesWhereTheyDoNotFit) {
  const std::vector<float> four(4, 0.5f);
  const auto rewrite = [&](const std::vector<std::string>& layers, ActivationScales scales,
                           QuantFormat format = QuantFormat::kInt8) {
    return error_of([&] {
      MixedReaders m;
      rewrite_to_fp8(m.graph, layers, scales, true, format);
    });
  };
  EXPECT_EQ(rewrite({"dw_y"}, {{}, {{"dw_x", four}}}), "");
  EXPECT_NE(
      rewrite({"dense_x"}, {{}, {{"x", four}}})
          .find("int8: per-channel scales for 'x', the input of layer 'dense_x', which is not a depthwise "
                "convolution"),
      std::string::npos);
  EXPECT_NE(rewrite({"dw_y"}, {{}, {{"dw_x", {0.5f, 0.5f, 0.5f}}}})
                .find("int8: 3 channel scales for 'dw_x' of shape [1, 4, 5, 5], the input of layer 'dw_y'"),
            std::string::npos);
  EXPECT_NE(rewrite({"dw_y"}, {{}, {{"dw_x", four}}}, QuantFormat::kE4M3)
                .find("only int8 quantizes activations per channel"),
            std::string::npos);
  EXPECT_NE(rewrite({"dw_y"}, {}).find("no calibrated scale for 'dw_x', the input of layer 'dw_y'"),
            std::string::npos);
}

// The simulation refuses a per-channel quantize point in front of a convolution whose output channels
// mix input channels: its input scales would not factor out of the sums.
TEST(Int8Depthwise, TheSimulationRefusesPerChannelInputsOfOtherConvolutions) {
  MixedReaders m;
  rewrite_to_fp8(m.graph, {"dw_x", "dense_x", "dw_y", "dw_z", "grouped_z"},
                 ActivationScales{{{"x", 0.5f}, {"dw_x", 0.5f}, {"dense_x", 0.5f}}, {}}, true,
                 QuantFormat::kInt8);
  assign_precision(m.graph, Precision::kF32);
  // Hand-made: channel scales on the point the dense layer reads.
  Node& point = m.graph.node(*m.graph.find_node("x.quantize"));
  point.attrs = QuantizeAttrs{0.5f, true, std::vector<float>(4, 0.5f)};
  const std::string error = error_of([&] { run_reference(m.graph, {Tensor(DType::kF32, {1, 4, 5, 5})}); });
  EXPECT_NE(error.find("int8 layer '"), std::string::npos) << error;
  EXPECT_NE(error.find("4 input scales need a depthwise convolution"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln
