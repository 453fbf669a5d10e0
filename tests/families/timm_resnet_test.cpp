#include <gtest/gtest.h>

#include "families/timm_resnet/builder.h"
#include "graph/verifier.h"
#include "tests/families/family_test_util.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

using testing::count_ops;
using testing::error_of;
using testing::has_node;
using testing::node_named;
using testing::output_shape;
using testing::ResNetSpec;
using testing::StemType;

ModelConfig config_for(std::int64_t num_classes) {
  ModelConfig config;
  config.architecture = "resnet50";
  config.num_classes = num_classes;
  config.preprocess.input_size = 224;
  return config;
}

ResNetSpec small_spec() {
  ResNetSpec spec;
  spec.layers = {2, 1, 3, 1};
  spec.channels = {16, 32, 64, 128};
  spec.num_classes = 10;
  return spec;
}

TEST(TimmResNet, Resnet50Architecture) {
  const auto weights = testing::resnet_checkpoint(ResNetSpec{});
  const ResNetArch arch = infer_resnet_arch(weights, config_for(1000));
  EXPECT_FALSE(arch.stem.deep);
  EXPECT_EQ(arch.stem.widths, (std::vector<std::int64_t>{64}));
  EXPECT_TRUE(arch.bottleneck);
  EXPECT_EQ(arch.num_classes, 1000);
  ASSERT_EQ(arch.stages.size(), 4u);
  const std::int64_t depths[] = {3, 4, 6, 3};
  const std::int64_t in_channels[] = {64, 256, 512, 1024};
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (std::size_t s = 0; s < 4; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s + 1));
    EXPECT_EQ(arch.stages[s].depth, depths[s]);
    EXPECT_EQ(arch.stages[s].in_channels, in_channels[s]);
    EXPECT_EQ(arch.stages[s].first_width, widths[s]);
    EXPECT_EQ(arch.stages[s].width, widths[s]);
    EXPECT_EQ(arch.stages[s].out_channels, widths[s] * 4);
    EXPECT_EQ(arch.stages[s].cardinality, 1);
    EXPECT_EQ(arch.stages[s].shortcut.kind, ShortcutKind::kConv);
    EXPECT_EQ(arch.stages[s].shortcut.kernel, 1);
  }
}

TEST(TimmResNet, Resnet50Graph) {
  const auto weights = testing::resnet_checkpoint(ResNetSpec{});
  const Graph graph = build_timm_resnet(weights, config_for(1000), 4);
  verify(graph);
  // conv1 + 16 blocks x 3 + 4 downsample convs.
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), 53u);
  EXPECT_EQ(count_ops(graph, OpKind::kBatchNorm), 53u);
  EXPECT_EQ(count_ops(graph, OpKind::kLinear), 1u);
  EXPECT_EQ(count_ops(graph, OpKind::kAdd), 16u);
  EXPECT_EQ(count_ops(graph, OpKind::kAvgPool2d), 0u);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{4, 1000}));
  EXPECT_EQ(static_cast<std::int64_t>(graph.parameter_count()), testing::float_parameter_count(weights));

  const auto& stem = node_named(graph, "conv1").attr<ConvAttrs>();
  EXPECT_EQ(stem.kernel, (std::array<std::int64_t, 2>{7, 7}));
  EXPECT_EQ(stem.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(stem.padding, (std::array<std::int64_t, 4>{3, 3, 3, 3}));
  const auto& pool = node_named(graph, "maxpool").attr<PoolAttrs>();
  EXPECT_EQ(pool.kernel, (std::array<std::int64_t, 2>{3, 3}));
  EXPECT_EQ(pool.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(pool.padding, (std::array<std::int64_t, 4>{1, 1, 1, 1}));
  EXPECT_EQ(output_shape(graph, "maxpool"), (Shape{4, 64, 56, 56}));
  // The stride sits on the 3x3 conv2 and on the 1x1 downsample conv.
  EXPECT_EQ(node_named(graph, "layer2.0.conv1").attr<ConvAttrs>().stride,
            (std::array<std::int64_t, 2>{1, 1}));
  EXPECT_EQ(node_named(graph, "layer2.0.conv2").attr<ConvAttrs>().stride,
            (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(node_named(graph, "layer2.1.conv2").attr<ConvAttrs>().stride,
            (std::array<std::int64_t, 2>{1, 1}));
  const auto& down = node_named(graph, "layer2.0.downsample.0").attr<ConvAttrs>();
  EXPECT_EQ(down.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(down.padding, (std::array<std::int64_t, 4>{0, 0, 0, 0}));
  EXPECT_EQ(node_named(graph, "layer2.0.downsample.1").op, OpKind::kBatchNorm);
  EXPECT_EQ(output_shape(graph, "layer2.0.conv2"), (Shape{4, 128, 28, 28}));
  EXPECT_EQ(output_shape(graph, "layer4.2.act3"), (Shape{4, 2048, 7, 7}));
  EXPECT_TRUE(has_node(graph, "layer1.0.downsample.0"));  // 64 -> 256 channels at stride 1
  EXPECT_FALSE(has_node(graph, "layer1.1.downsample.0"));
}

TEST(TimmResNet, Resnet50dDeepStemAvgDown) {
  ResNetSpec spec;
  spec.stem = StemType::kDeep;
  spec.stem_width = 32;
  spec.avg_down = true;
  const auto weights = testing::resnet_checkpoint(spec);
  const ResNetArch arch = infer_resnet_arch(weights, config_for(1000));
  EXPECT_TRUE(arch.stem.deep);
  EXPECT_EQ(arch.stem.widths, (std::vector<std::int64_t>{32, 32, 64}));
  for (const auto& stage : arch.stages) EXPECT_EQ(stage.shortcut.kind, ShortcutKind::kAvgPoolConv);
  const Graph graph = build_timm_resnet(weights, config_for(1000), 1);
  verify(graph);
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), 55u);
  EXPECT_EQ(count_ops(graph, OpKind::kAvgPool2d), 3u);  // stage 1's avg_down pool is an identity
  EXPECT_FALSE(has_node(graph, "layer1.0.downsample.0"));
  EXPECT_EQ(output_shape(graph, "layer3.0.downsample.0"), (Shape{1, 512, 14, 14}));
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{1, 1000}));
}

TEST(TimmResNet, Resnet18BasicBlocks) {
  ResNetSpec spec;
  spec.bottleneck = false;
  spec.layers = {2, 2, 2, 2};
  const auto weights = testing::resnet_checkpoint(spec);
  const ResNetArch arch = infer_resnet_arch(weights, config_for(1000));
  EXPECT_FALSE(arch.bottleneck);
  EXPECT_EQ(arch.stages[0].shortcut.kind, ShortcutKind::kIdentity);
  EXPECT_EQ(arch.stages[3].out_channels, 512);
  const Graph graph = build_timm_resnet(weights, config_for(1000), 1);
  verify(graph);
  // conv1 + 8 blocks x 2 + downsample convs of stages 2-4.
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), 20u);
  EXPECT_EQ(node_named(graph, "layer3.0.conv1").attr<ConvAttrs>().stride,
            (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_TRUE(has_node(graph, "layer3.0.act2"));
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{1, 1000}));
  EXPECT_EQ(static_cast<std::int64_t>(graph.parameter_count()), testing::float_parameter_count(weights));
}

struct Variant {
  std::string label;
  ResNetSpec spec;
};

// Names the variant in test output instead of dumping its bytes.
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.label; }

class TimmResNetVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(TimmResNetVariants, InfersAndBuilds) {
  const ResNetSpec& spec = GetParam().spec;
  const auto weights = testing::resnet_checkpoint(spec);
  const ModelConfig config = config_for(spec.num_classes);
  const ResNetArch arch = infer_resnet_arch(weights, config);
  const bool deep = spec.stem != StemType::kPlain;
  EXPECT_EQ(arch.stem.deep, deep);
  EXPECT_EQ(arch.bottleneck, spec.bottleneck);
  ASSERT_EQ(arch.stages.size(), spec.layers.size());
  const std::int64_t expansion = spec.bottleneck ? 4 : 1;
  std::int64_t in_channels = deep ? spec.stem_width * 2 : 64;
  std::size_t blocks = 0;
  std::size_t downsamples = 0;
  for (std::size_t s = 0; s < spec.layers.size(); ++s) {
    SCOPED_TRACE("stage " + std::to_string(s + 1));
    const std::int64_t out_channels = spec.channels[s] * expansion;
    const ResNetStageArch& stage = arch.stages[s];
    EXPECT_EQ(stage.depth, spec.layers[s]);
    EXPECT_EQ(stage.in_channels, in_channels);
    EXPECT_EQ(stage.out_channels, out_channels);
    if (spec.bottleneck) {
      EXPECT_EQ(stage.width, spec.channels[s] * spec.base_width / 64 * spec.cardinality);
      EXPECT_EQ(stage.cardinality, spec.cardinality);
    }
    const bool projects = s > 0 || in_channels != out_channels;
    const ShortcutKind projection = spec.avg_down ? ShortcutKind::kAvgPoolConv : ShortcutKind::kConv;
    EXPECT_EQ(stage.shortcut.kind, projects ? projection : ShortcutKind::kIdentity);
    blocks += static_cast<std::size_t>(spec.layers[s]);
    downsamples += projects ? 1 : 0;
    in_channels = out_channels;
  }
  const Graph graph = build_timm_resnet(weights, config, 2);
  verify(graph);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{2, spec.num_classes}));
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d),
            (deep ? 3u : 1u) + blocks * (spec.bottleneck ? 3u : 2u) + downsamples);
  EXPECT_EQ(static_cast<std::int64_t>(graph.parameter_count()), testing::float_parameter_count(weights));
}

std::vector<Variant> variants() {
  std::vector<Variant> list;
  list.push_back({"Small", small_spec()});
  ResNetSpec one = small_spec();
  one.layers = {1, 1, 1, 1};
  list.push_back({"OneBlockPerStage", one});
  ResNetSpec deep = small_spec();
  deep.stem = StemType::kDeep;
  deep.stem_width = 16;
  list.push_back({"DeepStem", deep});
  ResNetSpec deep_avg = deep;
  deep_avg.avg_down = true;
  list.push_back({"DeepStemAvgDown", deep_avg});
  ResNetSpec tiered = deep_avg;
  tiered.stem = StemType::kDeepTiered;
  tiered.stem_width = 32;
  list.push_back({"TieredStem", tiered});
  ResNetSpec resnext = small_spec();
  resnext.cardinality = 4;
  resnext.base_width = 8;
  list.push_back({"Cardinality4", resnext});
  ResNetSpec wide = small_spec();
  wide.base_width = 128;
  list.push_back({"Wide", wide});
  ResNetSpec basic = small_spec();
  basic.bottleneck = false;
  list.push_back({"BasicBlocks", basic});
  ResNetSpec basic_d = basic;
  basic_d.stem = StemType::kDeep;
  basic_d.stem_width = 32;
  basic_d.avg_down = true;
  list.push_back({"BasicBlocksDeepStemAvgDown", basic_d});
  return list;
}

INSTANTIATE_TEST_SUITE_P(Reduced, TimmResNetVariants, ::testing::ValuesIn(variants()),
                         [](const auto& test_info) { return test_info.param.label; });

TEST(TimmResNet, MissingKey) {
  auto weights = testing::resnet_checkpoint(small_spec());
  weights.erase("layer2.0.downsample.1.running_mean");
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "checkpoint key 'layer2.0.downsample.1.running_mean': missing (needed for layer "
            "layer2.0.downsample.1)");
}

TEST(TimmResNet, UnexpectedKeys) {
  auto weights = testing::resnet_checkpoint(small_spec());
  weights["layer1.0.se.fc1.weight"] = Tensor(DType::kF32, {4, 64, 1, 1});
  weights["layer1.0.se.fc1.bias"] = Tensor(DType::kF32, {4});
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "unexpected checkpoint keys: layer1.0.se.fc1.bias, layer1.0.se.fc1.weight");
}

TEST(TimmResNet, WrongShape) {
  auto weights = testing::resnet_checkpoint(small_spec());
  weights["layer3.1.conv2.weight"] = Tensor(DType::kF32, {64, 64, 1, 1});
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "checkpoint key 'layer3.1.conv2.weight': expected shape [64, 64, 3, 3], got [64, 64, 1, 1]");
}

TEST(TimmResNet, WrongDtype) {
  auto weights = testing::resnet_checkpoint(small_spec());
  weights["conv1.weight"] = Tensor(DType::kI32, {64, 3, 7, 7});
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "checkpoint key 'conv1.weight': expected dtype F32, F16 or BF16, got I32");
}

TEST(TimmResNet, MissingDownsample) {
  auto weights = testing::resnet_checkpoint(small_spec());
  std::erase_if(weights, [](const auto& entry) { return entry.first.starts_with("layer2.0.downsample."); });
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "layer layer2.0: maps 64 channels to 128 with stride 2 but has no shortcut projection "
            "(no 'layer2.0.downsample.*' keys)");
}

TEST(TimmResNet, EmptyCheckpoint) {
  const std::map<std::string, Tensor> weights;
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "checkpoint key 'conv1.weight': missing (needed for layer conv1)");
}

TEST(TimmResNet, AntiAliasedArchitecturesAreRejected) {
  const auto weights = testing::resnet_checkpoint(small_spec());
  ModelConfig config = config_for(10);
  config.architecture = "resnetaa50d.sw_in12k_ft_in1k";
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config, 1); }),
            "architecture 'resnetaa50d.sw_in12k_ft_in1k': anti-aliased downsampling (timm's aa_layer) is not "
            "supported");
}

TEST(TimmResNet, ResNestCheckpointIsRejected) {
  testing::ResNestSpec resnest;
  resnest.layers = {1, 1, 1, 1};
  resnest.num_classes = 10;
  const auto weights = testing::resnest_checkpoint(resnest);
  EXPECT_EQ(error_of([&] { build_timm_resnet(weights, config_for(10), 1); }),
            "checkpoint key 'layer1.0.conv2.weight': missing (needed for layer layer1.0.conv2)");
}

}  // namespace
}  // namespace kiln
