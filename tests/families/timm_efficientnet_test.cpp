#include <gtest/gtest.h>

#include "families/timm_efficientnet/builder.h"
#include "graph/verifier.h"
#include "tests/families/family_test_util.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

using testing::count_ops;
using testing::EfficientNetSpec;
using testing::error_of;
using testing::has_node;
using testing::node_named;
using testing::output_shape;

ModelConfig config_for(std::int64_t num_classes, std::string architecture = "efficientnet_b0") {
  ModelConfig config;
  config.architecture = std::move(architecture);
  config.num_classes = num_classes;
  config.preprocess.input_size = 224;
  return config;
}

EfficientNetSpec tiny_spec() {
  EfficientNetSpec spec;
  spec.channel_multiplier = 0.25;
  spec.depth_multiplier = 0.5;
  spec.num_classes = 10;
  return spec;
}

std::vector<std::int64_t> depths(const EfficientNetArch& arch) {
  std::vector<std::int64_t> out;
  for (const auto& stage : arch.stages) out.push_back(static_cast<std::int64_t>(stage.size()));
  return out;
}

TEST(TimmEfficientNet, B0Architecture) {
  const EfficientNetArch arch =
      infer_efficientnet_arch(testing::efficientnet_checkpoint({}), config_for(1000));
  EXPECT_EQ(arch.in_channels, 3);
  EXPECT_EQ(arch.stem_channels, 32);
  EXPECT_EQ(depths(arch), (std::vector<std::int64_t>{1, 2, 2, 3, 3, 4, 1}));
  EXPECT_EQ(arch.head_channels, 1280);
  EXPECT_EQ(arch.num_classes, 1000);
  const std::int64_t kernels[] = {3, 3, 5, 3, 5, 5, 3};
  const std::int64_t strides[] = {1, 2, 2, 2, 1, 2, 1};
  const std::int64_t widths[] = {16, 24, 40, 80, 112, 192, 320};
  for (std::size_t s = 0; s < 7; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    const auto& first = arch.stages[s][0];
    EXPECT_EQ(first.kind,
              s == 0 ? EfficientNetBlockKind::kDepthwiseSeparable : EfficientNetBlockKind::kInvertedResidual);
    EXPECT_EQ(first.kernel, kernels[s]);
    EXPECT_EQ(first.stride, strides[s]);
    EXPECT_EQ(first.out_channels, widths[s]);
    EXPECT_EQ(first.mid_channels, s == 0 ? 32 : first.in_channels * 6);
    EXPECT_EQ(first.se_channels, first.in_channels / 4);
    EXPECT_FALSE(first.skip);  // every stage changes width
    for (std::size_t b = 1; b < arch.stages[s].size(); ++b) {
      EXPECT_EQ(arch.stages[s][b].stride, 1);
      EXPECT_TRUE(arch.stages[s][b].skip);
    }
  }
}

TEST(TimmEfficientNet, B0Graph) {
  const Graph graph = build_timm_efficientnet(testing::efficientnet_checkpoint({}), config_for(1000), 2);
  verify(graph);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{2, 1000}));
  EXPECT_EQ(count_ops(graph, OpKind::kChannelScale), 16u);  // one squeeze-excite per block
  EXPECT_EQ(count_ops(graph, OpKind::kAdd), 9u);            // blocks after the first of each stage
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), 2u + 1u * 4u + 15u * 5u);  // stem, head; DS 4, IR 5 each
  EXPECT_EQ(output_shape(graph, "bn1.act"), (Shape{2, 32, 112, 112}));
  EXPECT_EQ(output_shape(graph, "blocks.2.0.conv_dw"), (Shape{2, 144, 28, 28}));
  const auto& dw = node_named(graph, "blocks.2.0.conv_dw").attr<ConvAttrs>();
  EXPECT_EQ(dw.padding, (std::array<std::int64_t, 4>{2, 2, 2, 2}));  // symmetric k // 2, not TF 'same'
  EXPECT_EQ(dw.groups, 144);
  EXPECT_EQ(node_named(graph, "blocks.1.0.se.act1").attr<ActivationAttrs>().activation, Activation::kSilu);
  EXPECT_EQ(node_named(graph, "blocks.1.0.se.gate").attr<ActivationAttrs>().activation, Activation::kSigmoid);
  EXPECT_FALSE(has_node(graph, "blocks.1.0.bn3.act"));  // the projection has no activation
  EXPECT_TRUE(has_node(graph, "blocks.1.1.add"));
  EXPECT_EQ(output_shape(graph, "bn2.act"), (Shape{2, 1280, 7, 7}));
}

TEST(TimmEfficientNet, WidthAndDepthComeFromTheWeights) {
  EfficientNetSpec spec;  // efficientnet_b2's multipliers
  spec.channel_multiplier = 1.1;
  spec.depth_multiplier = 1.2;
  const EfficientNetArch arch =
      infer_efficientnet_arch(testing::efficientnet_checkpoint(spec), config_for(1000, "efficientnet_b2"));
  EXPECT_EQ(depths(arch), (std::vector<std::int64_t>{2, 3, 3, 4, 4, 5, 2}));
  EXPECT_EQ(arch.stem_channels, 32);
  EXPECT_EQ(arch.head_channels, 1408);
  EXPECT_EQ(arch.stages[0][1].kind, EfficientNetBlockKind::kDepthwiseSeparable);
  EXPECT_TRUE(arch.stages[0][1].skip);

  const EfficientNetArch tiny =
      infer_efficientnet_arch(testing::efficientnet_checkpoint(tiny_spec()), config_for(10));
  EXPECT_EQ(depths(tiny), (std::vector<std::int64_t>{1, 1, 1, 2, 2, 2, 1}));
  EXPECT_EQ(tiny.stem_channels, 8);
  EXPECT_TRUE(tiny.stages[0][0].skip);  // 8 -> 8 channels at stride 1
}

TEST(TimmEfficientNet, SqueezeExciteIsOptional) {
  EfficientNetSpec spec = tiny_spec();
  spec.squeeze_excite = false;
  const Graph graph = build_timm_efficientnet(testing::efficientnet_checkpoint(spec), config_for(10), 1);
  verify(graph);
  EXPECT_EQ(count_ops(graph, OpKind::kChannelScale), 0u);
}

TEST(TimmEfficientNet, ArchitecturesItCannotBuild) {
  const auto weights = testing::efficientnet_checkpoint(tiny_spec());
  EXPECT_EQ(error_of([&] { infer_efficientnet_arch(weights, config_for(10, "tf_efficientnet_b0")); }),
            "architecture 'tf_efficientnet_b0': TensorFlow-ported EfficientNets ('same' padding, BN epsilon "
            "1e-3) are not supported");
  EXPECT_EQ(
      error_of([&] { infer_efficientnet_arch(weights, config_for(10, "efficientnet_lite0")); }),
      "architecture 'efficientnet_lite0': EfficientNet-Lite (ReLU6, no squeeze-excite) is not supported");
  EXPECT_EQ(
      error_of([&] { infer_efficientnet_arch(weights, config_for(10, "efficientnet_blur_b0")); }),
      "architecture 'efficientnet_blur_b0': anti-aliased downsampling (timm's aa_layer) is not supported");
  EXPECT_NE(error_of([&] {
              infer_efficientnet_arch(weights, config_for(10, "mobilenetv2_100"));
            }).find("timm_efficientnet builds timm's efficientnet_b0..b8"),
            std::string::npos);
}

TEST(TimmEfficientNet, ErrorsNameTheKey) {
  const auto good = testing::efficientnet_checkpoint(tiny_spec());
  const ModelConfig config = config_for(10);

  auto missing = good;
  missing.erase("blocks.3.1.conv_pwl.weight");
  missing.erase("blocks.3.1.conv_dw.weight");
  EXPECT_NE(error_of([&] { build_timm_efficientnet(missing, config, 1); }).find("blocks.3.1.conv_dw.weight"),
            std::string::npos);

  auto no_stage = good;
  for (auto it = no_stage.begin(); it != no_stage.end();) {
    it = it->first.rfind("blocks.6.", 0) == 0 ? no_stage.erase(it) : std::next(it);
  }
  EXPECT_EQ(error_of([&] { infer_efficientnet_arch(no_stage, config); }),
            "checkpoint keys 'blocks.S.*': found 6 stages, EfficientNet has 7");

  EXPECT_EQ(error_of([&] { infer_efficientnet_arch(good, config_for(1000)); }),
            "checkpoint key 'classifier.weight': expected [1000 (num_classes of the config), 320 (outputs of "
            "conv_head)], got shape [10, 320]");

  auto even_kernel = good;
  even_kernel["blocks.2.0.conv_dw.weight"] = Tensor(DType::kF32, {48, 1, 4, 4});
  EXPECT_EQ(
      error_of([&] { infer_efficientnet_arch(even_kernel, config); }),
      "checkpoint key 'blocks.2.0.conv_dw.weight': expected a depthwise weight [48, 1, k, k] with odd k, "
      "got shape [48, 1, 4, 4]");

  auto extra = good;
  extra["blocks.1.0.conv_extra.weight"] = Tensor(DType::kF32, {1});
  EXPECT_NE(error_of([&] { build_timm_efficientnet(extra, config, 1); }).find("blocks.1.0.conv_extra.weight"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
