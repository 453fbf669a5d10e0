// Per-channel int8 input scales on the cpu backend (oneDNN's per-channel scaled reorder into s8 codes and
// its depthwise int8 convolution with output scales input scale[c] x weight scale[c]) against
// cpu-reference's exact simulation, on small graphs rewritten as `kiln build --precision int8` rewrites
// them. The bound is onednn_int8_test.cpp's, for the same reason: both sum the same code products exactly
// and differ only by f32 rounding after the sum, which a later quantize point turns into a whole code step
// only for a value within a few ulps of a rounding tie.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "quant/depthwise_inputs.h"
#include "quant/fake_quant.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "reference/executor.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::relative_difference;
using testing::run_on;
using testing::SmallGraph;

constexpr double kInt8BackendTolerance = 1e-4;

// Each channel's max |x| (axis 1) of a [N, C, ...] tensor.
std::vector<float> channel_amax(const Tensor& t) {
  std::vector<float> amax(static_cast<std::size_t>(t.dim(1)), 0.0f);
  const auto plane = static_cast<std::size_t>(t.numel() / (t.dim(0) * t.dim(1)));
  const auto values = t.f32();
  for (std::size_t i = 0; i < values.size(); ++i) {
    float& m = amax[(i / plane) % amax.size()];
    m = std::max(m, std::fabs(values[i]));
  }
  return amax;
}

// Every convolution in int8 with the max calibrator's scales on `input`: one per channel for the tensors
// only depthwise convolutions read when `per_channel`, else one per tensor; the rest fp32.
Graph as_int8(const Graph& graph, const Tensor& input, bool per_channel) {
  std::map<std::string, Tensor> values{{graph.value(graph.inputs()[0]).name, input}};
  run_reference(graph, {input},
                [&](const Node& node, const Tensor& out) { values[graph.value(node.output).name] = out; });
  const std::vector<std::string> layers = quantizable_layers(graph);
  const std::vector<ValueId> channel_inputs =
      per_channel ? depthwise_only_inputs(graph, layers) : std::vector<ValueId>{};
  ActivationScales scales;
  for (const ValueId v : fp8_activation_inputs(graph, layers)) {
    const std::string& name = graph.value(v).name;
    const std::vector<float> amax = channel_amax(values.at(name));
    if (std::find(channel_inputs.begin(), channel_inputs.end(), v) != channel_inputs.end()) {
      for (const float a : amax) scales.channels[name].push_back(scale_for_amax(a, QuantFormat::kInt8));
    } else {
      scales.tensors[name] = scale_for_amax(*std::max_element(amax.begin(), amax.end()), QuantFormat::kInt8);
    }
  }
  Graph int8 = graph;
  rewrite_to_fp8(int8, layers, scales, true, QuantFormat::kInt8);
  assign_precision(int8, Precision::kF32);
  int8.compact();
  return int8;
}

// An input whose channel c spans about 2^(c - 8): one scale per tensor leaves the narrow channels a code or
// two.
Tensor spread_channels(Shape shape, std::uint32_t seed) {
  Tensor t = random_tensor(shape, seed);
  const auto plane = static_cast<std::size_t>(shape[2] * shape[3]);
  auto values = t.mutable_f32();
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] *= std::ldexp(1.0f, static_cast<int>((i / plane) % static_cast<std::size_t>(shape[1])) - 8);
  return t;
}

// The cpu backend agrees with the simulation; returns the steps it compiled.
std::string expect_agrees(const Graph& int8, const Tensor& input) {
  const Tensor ours = run_on("cpu", int8, {input}).at(0);
  const Tensor ref = run_on("cpu-reference", int8, {input}).at(0);
  EXPECT_LE(relative_difference(ours, ref), kInt8BackendTolerance);
  CompileOptions options;
  return make_backend("cpu")->compile(int8, options)->describe();
}

// ||y - ref|| / ||ref|| of the worst channel (axis 1): the narrow channels' error, which the whole
// tensor's norm, set by the wide channels, hides.
double worst_channel_error(const Tensor& y, const Tensor& ref) {
  const auto channels = static_cast<std::size_t>(ref.dim(1));
  const auto plane = static_cast<std::size_t>(ref.numel() / (ref.dim(0) * ref.dim(1)));
  std::vector<double> error(channels, 0.0), norm(channels, 0.0);
  for (std::size_t i = 0; i < ref.f32().size(); ++i) {
    const std::size_t c = (i / plane) % channels;
    const double d = static_cast<double>(y.f32()[i]) - static_cast<double>(ref.f32()[i]);
    error[c] += d * d;
    norm[c] += static_cast<double>(ref.f32()[i]) * static_cast<double>(ref.f32()[i]);
  }
  double worst = 0.0;
  for (std::size_t c = 0; c < channels; ++c) worst = std::max(worst, std::sqrt(error[c] / norm[c]));
  return worst;
}

// EfficientNet's pattern: an expansion convolution with SiLU, then a depthwise one; and a depthwise
// convolution reading the graph input. Per-channel scales agree with the simulation.
TEST(OnednnInt8Depthwise, PerChannelInputScalesAgreeWithTheSimulation) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 9, 9});
  const ValueId a = g.conv(x, 16, conv_attrs(3, 1, 1, 16, Activation::kSilu));
  const ValueId b = g.conv(a, 32, conv_attrs(1, 1, 0, 1, Activation::kSilu));
  const ValueId c = g.conv(b, 32, conv_attrs(3, 2, 1, 32, Activation::kSilu));
  g.output(g.conv(c, 8, conv_attrs(1, 1, 0)));
  const Tensor input = spread_channels({2, 16, 9, 9}, 21);
  const std::string steps = expect_agrees(as_int8(g.graph, input, true), input);
  EXPECT_EQ(testing::count_of(steps, "per channel"), 2u) << steps;  // x's and b's quantize points
}

// On channels whose ranges differ by 2^15, one input scale leaves the narrowest channels a code or two
// (their error near 100%); a scale per channel gives each the whole int8 range.
TEST(OnednnInt8Depthwise, PerChannelScalesKeepNarrowChannels) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {16, 9, 9});
  g.output(g.conv(x, 16, conv_attrs(3, 1, 1, 16), false));
  const Tensor input = spread_channels({2, 16, 9, 9}, 22);
  const Tensor fp32 = run_on("cpu-reference", g.graph, {input}).at(0);
  const double channel_error =
      worst_channel_error(run_on("cpu", as_int8(g.graph, input, true), {input}).at(0), fp32);
  const double tensor_error =
      worst_channel_error(run_on("cpu", as_int8(g.graph, input, false), {input}).at(0), fp32);
  EXPECT_LT(channel_error, 0.05) << "per tensor: " << tensor_error;
  EXPECT_GT(tensor_error, 0.5) << "per channel: " << channel_error;
  std::cout << "worst channel's error: per channel " << channel_error << ", per tensor " << tensor_error
            << "\n";
}

// A convolution without SiLU writes the codes of the per-channel quantize point after it itself: its output
// scales divide by each channel's scale.
TEST(OnednnInt8Depthwise, AConvolutionWritesPerChannelCodesForTheDepthwiseLayerAfterIt) {
  KILN_SKIP_WITHOUT_INT8_KERNELS();
  SmallGraph g;
  const ValueId x = g.input("x", {8, 10, 10});
  const ValueId a = g.conv(x, 24, conv_attrs(1, 1, 0, 1, Activation::kRelu));
  g.output(g.conv(a, 24, conv_attrs(3, 1, 1, 24, Activation::kRelu)));
  const Tensor input = spread_channels({1, 8, 10, 10}, 23);
  const std::string steps = expect_agrees(as_int8(g.graph, input, true), input);
  EXPECT_EQ(testing::count_of(steps, "writes the next layer's codes"), 1u) << steps;
}

// A per-channel quantize point whose value is also a graph output runs as f32 fake quantization: the
// cpu backend computes the same values as the simulation, bit for bit.
TEST(OnednnInt8Depthwise, PerChannelFakeQuantizationIsExact) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {3, 5, 7});
  const ValueId q =
      g.node(OpKind::kQuantize, {x}, QuantizeAttrs{0.25f, true, {0.0625f, 0.25f, 0.001953125f}});
  g.output(q);
  const Tensor input = random_tensor({2, 3, 5, 7}, 29, -40.0f, 40.0f);
  const Tensor ours = run_on("cpu", g.graph, {input}).at(0);
  const Tensor ref = run_on("cpu-reference", g.graph, {input}).at(0);
  EXPECT_TRUE(std::equal(ours.f32().begin(), ours.f32().end(), ref.f32().begin(), ref.f32().end()));
  EXPECT_EQ(ref.f32()[0], fake_quantize_int8(input.f32()[0], 0.0625f));
  EXPECT_EQ(ref.f32()[35 * 2], fake_quantize_int8(input.f32()[35 * 2], 0.001953125f));
}

}  // namespace
}  // namespace kiln
