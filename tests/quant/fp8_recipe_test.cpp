// FP8 layer selection and the rewrite into quantize points, on full-size ResNeSt-50d and ResNet-50
// graphs built from synthetic checkpoints with timm's key names and shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "families/timm_resnest/builder.h"
#include "families/timm_resnet/builder.h"
#include "graph/verifier.h"
#include "passes/pass_manager.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "tests/families/family_test_util.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

using testing::count_ops;
using testing::error_of;

ModelConfig config_for(std::string architecture) {
  ModelConfig config;
  config.architecture = std::move(architecture);
  config.num_classes = 1000;
  config.preprocess.input_size = 224;
  return config;
}

// As the builder sees it: batch norms folded, activations fused.
Graph resnest50d() {
  Graph graph =
      build_timm_resnest(testing::resnest_checkpoint(testing::ResNestSpec{}), config_for("resnest50d"), 1);
  run_passes(graph);
  graph.compact();
  return graph;
}

Graph resnet50() {
  Graph graph =
      build_timm_resnet(testing::resnet_checkpoint(testing::ResNetSpec{}), config_for("resnet50"), 1);
  run_passes(graph);
  graph.compact();
  return graph;
}

std::map<std::string, float> unit_scales(const Graph& graph, const std::vector<std::string>& layers) {
  std::map<std::string, float> scales;
  for (const ValueId value : fp8_activation_inputs(graph, layers)) scales[graph.value(value).name] = 0.01f;
  return scales;
}

TEST(Glob, MatchesStarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("layer1.*", "layer1.0.conv1"));
  EXPECT_FALSE(glob_match("layer1.*", "layer10.0.conv1"));
  EXPECT_FALSE(glob_match("layer1.*", "xlayer1.0"));
  EXPECT_TRUE(glob_match("*.fc1", "layer3.5.conv2.fc1"));
  EXPECT_FALSE(glob_match("*.fc1", "layer3.5.conv2.fc10"));
  EXPECT_TRUE(glob_match("conv1", "conv1"));
  EXPECT_FALSE(glob_match("conv1", "conv1.0"));
  EXPECT_TRUE(glob_match("layer?.0.*", "layer4.0.downsample.1"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("**a*b", "xxaYYb"));
  EXPECT_FALSE(glob_match("a*b", "aXbY"));
}

TEST(Recipes, ResNest50dLayerCountsMatchTheSeedStudy) {
  const Graph graph = resnest50d();
  EXPECT_EQ(quantizable_layers(graph).size(), 87u);
  EXPECT_EQ(select_layers(graph, parse_recipe("all")).size(), 84u);
  EXPECT_EQ(select_layers(graph, parse_recipe("nose")).size(), 52u);
  EXPECT_EQ(select_layers(graph, parse_recipe("nose-L1")).size(), 42u);
  const auto all = select_layers(graph, parse_recipe("all"));
  for (const char* stem : {"conv1.0", "conv1.3", "conv1.6"}) {
    EXPECT_EQ(std::count(all.begin(), all.end(), stem), 0) << stem;
  }
  EXPECT_EQ(std::count(all.begin(), all.end(), "layer2.0.downsample.1"), 1);
}

TEST(Recipes, ResNet50AllKeepsOnlyTheStem) {
  const Graph graph = resnet50();
  EXPECT_EQ(quantizable_layers(graph).size(), 53u);
  EXPECT_EQ(select_layers(graph, parse_recipe("all")).size(), 52u);
  EXPECT_EQ(select_layers(graph, parse_recipe("nose")).size(), 52u);  // no attention gates
  EXPECT_EQ(select_layers(graph, parse_recipe("nose-L1")).size(), 52u - 10u);
}

TEST(Recipes, Patterns) {
  const Graph graph = resnest50d();
  EXPECT_EQ(select_layers(graph, parse_recipe("include=layer4.*")).size(), 3u * 5u + 1u);
  EXPECT_EQ(select_layers(graph, parse_recipe("include=layer4.*;exclude=*.fc1,*.fc2")).size(), 3u * 3u + 1u);
  EXPECT_EQ(select_layers(graph, parse_recipe("exclude=conv1.*")).size(), 84u);
  EXPECT_NE(error_of([&] {
              select_layers(graph, parse_recipe("include=layer9.*"));
            }).find("pattern 'layer9.*' matches none of the 87 convolutions"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_recipe("everything"); }).find("expected all, nose, nose-L1, auto"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_recipe("include=a,,b"); }).find("empty pattern"), std::string::npos);
}

TEST(Fp8Rewrite, QuantizePointsSitWhereAnFp8EngineHasThem) {
  Graph graph = resnet50();
  const auto layers = select_layers(graph, parse_recipe("all"));
  const auto inputs = fp8_activation_inputs(graph, layers);
  // Each stage's first block: conv1 and the downsample read the same tensor and share a quantize point.
  EXPECT_EQ(inputs.size(), layers.size() - 4u);
  const auto report = rewrite_to_fp8(graph, layers, {unit_scales(graph, layers)});
  graph.compact();
  verify(graph);
  EXPECT_EQ(report.size(), 52u);
  EXPECT_EQ(count_ops(graph, OpKind::kQuantize), 48u);
  EXPECT_EQ(count_ops(graph, OpKind::kDequantize), 52u);
  std::size_t fp8 = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op != OpKind::kConv2d) continue;
    if (node.precision != Precision::kF8) {
      EXPECT_EQ(node.name, "conv1");
      continue;
    }
    ++fp8;
    const Node& quantize = graph.node(graph.value(node.inputs[0]).producer);
    const Node& dequantize = graph.node(graph.value(node.inputs[1]).producer);
    EXPECT_EQ(quantize.op, OpKind::kQuantize) << node.name;
    EXPECT_EQ(dequantize.op, OpKind::kDequantize) << node.name;
    EXPECT_EQ(graph.value(dequantize.inputs[0]).constant.dtype(), DType::kF8E4M3) << node.name;
    EXPECT_EQ(graph.value(dequantize.inputs[1]).shape, (Shape{graph.value(node.output).shape[1]}))
        << node.name;
  }
  EXPECT_EQ(fp8, 52u);
}

TEST(Fp8Rewrite, WeightCodesAreTheFoldedKernelOverItsChannelScale) {
  Graph graph = resnest50d();
  const NodeId id = *graph.find_node("layer3.2.conv2.conv");
  const Tensor folded = graph.value(graph.node(id).inputs[1]).constant.clone();
  const auto report =
      rewrite_to_fp8(graph, {"layer3.2.conv2.conv"}, {unit_scales(graph, {"layer3.2.conv2.conv"})});
  const Node& dequantize = graph.node(graph.value(graph.node(id).inputs[1]).producer);
  const Tensor codes = graph.value(dequantize.inputs[0]).constant.to(DType::kF32);
  const auto scales = graph.value(dequantize.inputs[1]).constant.f32();
  const std::size_t per_channel = static_cast<std::size_t>(folded.numel() / folded.dim(0));
  for (std::size_t channel = 0; channel < scales.size(); ++channel) {
    float amax = 0.0f, code_amax = 0.0f;
    for (std::size_t k = 0; k < per_channel; ++k) {
      const std::size_t i = channel * per_channel + k;
      amax = std::max(amax, std::fabs(folded.f32()[i]));
      code_amax = std::max(code_amax, std::fabs(codes.f32()[i]));
      ASSERT_EQ(codes.f32()[i], round_to_e4m3(folded.f32()[i] / scales[channel])) << "element " << i;
    }
    EXPECT_FLOAT_EQ(scales[channel], amax / 448.0f);
    EXPECT_EQ(code_amax, 448.0f) << "each channel's largest weight maps to the largest E4M3 value";
  }
  EXPECT_FLOAT_EQ(report.at(0).activation_scale, 0.01f);
}

// ResNet-50's residual stream in E4M3: the input of each of its 12 identity blocks is read by the block's
// conv1 (FP8) and its add, so the add reads the quantize point and the tensor has no other reader; a stage's
// first block (conv1 and the downsample, no add) is left alone.
TEST(Fp8Rewrite, ResidualAddsReadTheQuantizePointWhereOnlyAddsReadTheTensor) {
  Graph graph = resnet50();
  const auto layers = select_layers(graph, parse_recipe("all"));
  rewrite_to_fp8(graph, layers, {unit_scales(graph, layers)});
  const std::vector<std::string> held = quantize_residuals(graph);
  graph.compact();
  verify(graph);
  ASSERT_EQ(held.size(), 12u);
  EXPECT_EQ(held.front(), "layer1.0.add");
  const auto consumers = graph.consumers();
  std::size_t adds_reading_codes = 0;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (node.op != OpKind::kAdd) continue;
    for (const ValueId input : node.inputs) {
      const NodeId producer = graph.value(input).producer;
      if (producer == kNoNode || graph.node(producer).op != OpKind::kQuantize) continue;
      ++adds_reading_codes;
      const ValueId x = graph.node(producer).inputs[0];
      EXPECT_EQ(consumers[static_cast<std::size_t>(x)].size(), 1u) << graph.value(x).name;
    }
  }
  EXPECT_EQ(adds_reading_codes, 12u);
}

// A tensor that an fp16 layer reads besides the add keeps its value: nothing is redirected.
TEST(Fp8Rewrite, ResidualsStayWhereAnotherLayerReadsThemUnquantized) {
  Graph graph = resnet50();
  const std::vector<std::string> layers{"layer1.1.conv1"};
  rewrite_to_fp8(graph, layers, {unit_scales(graph, layers)});
  EXPECT_EQ(quantize_residuals(graph).size(), 1u);  // layer1.0's output: read by layer1.1.conv1 and add
  Graph partly = resnet50();
  const std::vector<std::string> none_with_add{"layer1.0.conv2"};
  rewrite_to_fp8(partly, none_with_add, {unit_scales(partly, none_with_add)});
  EXPECT_TRUE(quantize_residuals(partly).empty());  // its input is read by nothing else
  // int8 points are held the same way; per-channel ones (depthwise inputs) are not.
  Graph int8 = resnet50();
  rewrite_to_fp8(int8, layers, {unit_scales(int8, layers)}, true, QuantFormat::kInt8);
  EXPECT_EQ(quantize_residuals(int8), std::vector<std::string>{"layer1.0.add"});
}

TEST(Fp8Rewrite, RefusesWhatItCannotQuantize) {
  Graph graph = resnest50d();
  EXPECT_NE(
      error_of([&] { rewrite_to_fp8(graph, {"fc"}, ActivationScales{}); }).find("'fc' is not a convolution"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { rewrite_to_fp8(graph, {"nope"}, ActivationScales{}); }).find("no layer named 'nope'"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              rewrite_to_fp8(graph, {"layer1.0.conv1"}, ActivationScales{});
            }).find("no calibrated scale"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
