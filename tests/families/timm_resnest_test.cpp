#include <gtest/gtest.h>

#include "families/timm_resnest/builder.h"
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
using testing::ResNestSpec;

ModelConfig config_for(std::int64_t num_classes, std::string architecture = "resnest50d") {
  ModelConfig config;
  config.architecture = std::move(architecture);
  config.num_classes = num_classes;
  config.preprocess.input_size = 224;
  return config;
}

// A small ResNeSt with everything the full one has: deep stem, avg_down, strided stages, radix > 1.
ResNestSpec small_spec() {
  ResNestSpec spec;
  spec.layers = {2, 1, 3, 1};
  spec.channels = {16, 32, 64, 128};
  spec.stem_width = 16;
  spec.num_classes = 10;
  return spec;
}

TEST(TimmResNest, Resnest50dArchitecture) {
  const auto weights = testing::resnest_checkpoint(ResNestSpec{});
  const ResNestArch arch = infer_resnest_arch(weights, config_for(1000));
  EXPECT_TRUE(arch.stem.deep);
  EXPECT_EQ(arch.stem.in_channels, 3);
  EXPECT_EQ(arch.stem.widths, (std::vector<std::int64_t>{32, 32, 64}));
  EXPECT_FALSE(arch.avd_first);
  EXPECT_EQ(arch.num_classes, 1000);
  ASSERT_EQ(arch.stages.size(), 4u);
  const std::int64_t depths[] = {3, 4, 6, 3};
  const std::int64_t in_channels[] = {64, 256, 512, 1024};
  const std::int64_t widths[] = {64, 128, 256, 512};
  const std::int64_t attention[] = {32, 64, 128, 256};
  for (std::size_t s = 0; s < 4; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s + 1));
    const ResNestStageArch& stage = arch.stages[s];
    EXPECT_EQ(stage.depth, depths[s]);
    EXPECT_EQ(stage.in_channels, in_channels[s]);
    EXPECT_EQ(stage.width, widths[s]);
    EXPECT_EQ(stage.split_width, widths[s]);
    EXPECT_EQ(stage.attention_width, attention[s]);
    EXPECT_EQ(stage.out_channels, widths[s] * 4);
    EXPECT_EQ(stage.radix, 2);
    EXPECT_EQ(stage.cardinality, 1);
    EXPECT_EQ(stage.shortcut.kind, ShortcutKind::kAvgPoolConv);
  }
}

TEST(TimmResNest, Resnest50dGraph) {
  const auto weights = testing::resnest_checkpoint(ResNestSpec{});
  const Graph graph = build_timm_resnest(weights, config_for(1000), 2);
  verify(graph);
  // 3 stem convs + 16 blocks x (conv1, conv2.conv, fc1, fc2, conv3) + 4 downsample convs.
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), 87u);
  EXPECT_EQ(count_ops(graph, OpKind::kLinear), 1u);
  // Stem: 3; per block: bn1, conv2.bn0, conv2.bn1, bn3; 4 downsample BNs.
  EXPECT_EQ(count_ops(graph, OpKind::kBatchNorm), 3u + 16u * 4u + 4u);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixSum), 16u);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixSoftmax), 16u);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixWeightedSum), 16u);
  EXPECT_EQ(count_ops(graph, OpKind::kAdd), 16u);
  // avd_last in the first block of stages 2-4, the avg_down pools in the same blocks.
  EXPECT_EQ(count_ops(graph, OpKind::kAvgPool2d), 6u);
  EXPECT_EQ(count_ops(graph, OpKind::kMaxPool2d), 1u);

  ASSERT_EQ(graph.outputs().size(), 1u);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{2, 1000}));
  EXPECT_EQ(static_cast<std::int64_t>(graph.parameter_count()), testing::float_parameter_count(weights));

  EXPECT_EQ(output_shape(graph, "maxpool"), (Shape{2, 64, 56, 56}));
  EXPECT_EQ(output_shape(graph, "layer1.2.act3"), (Shape{2, 256, 56, 56}));
  EXPECT_EQ(output_shape(graph, "layer2.0.conv2.weighted_sum"), (Shape{2, 128, 56, 56}));
  EXPECT_EQ(output_shape(graph, "layer2.0.avd_last"), (Shape{2, 128, 28, 28}));
  EXPECT_EQ(output_shape(graph, "layer2.0.downsample.0"), (Shape{2, 256, 28, 28}));
  EXPECT_EQ(output_shape(graph, "layer3.5.act3"), (Shape{2, 1024, 14, 14}));
  EXPECT_EQ(output_shape(graph, "layer4.2.act3"), (Shape{2, 2048, 7, 7}));
  EXPECT_EQ(output_shape(graph, "layer1.0.conv2.fc1"), (Shape{2, 32, 1, 1}));
  EXPECT_EQ(output_shape(graph, "layer4.0.conv2.rsoftmax"), (Shape{2, 1024, 1, 1}));

  // Stage 1 has no stride: no avd pool and an identity pool in its avg_down shortcut.
  EXPECT_FALSE(has_node(graph, "layer1.0.avd_last"));
  EXPECT_FALSE(has_node(graph, "layer1.0.downsample.0"));
  EXPECT_TRUE(has_node(graph, "layer1.0.downsample.1"));
  EXPECT_FALSE(has_node(graph, "layer2.1.avd_last"));
  EXPECT_FALSE(has_node(graph, "layer2.0.avd_first"));

  const auto& split_conv = node_named(graph, "layer3.0.conv2.conv").attr<ConvAttrs>();
  EXPECT_EQ(split_conv.stride, (std::array<std::int64_t, 2>{1, 1}));
  EXPECT_EQ(split_conv.groups, 2);
  EXPECT_EQ(node_named(graph, "layer3.0.conv2.fc2").attr<ConvAttrs>().groups, 1);
  const auto& avd = node_named(graph, "layer3.0.avd_last").attr<PoolAttrs>();
  EXPECT_EQ(avd.kernel, (std::array<std::int64_t, 2>{3, 3}));
  EXPECT_EQ(avd.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(avd.padding, (std::array<std::int64_t, 4>{1, 1, 1, 1}));
  EXPECT_TRUE(avd.count_include_pad);
  EXPECT_FALSE(avd.ceil_mode);
  const auto& down = node_named(graph, "layer3.0.downsample.0").attr<PoolAttrs>();
  EXPECT_EQ(down.kernel, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(down.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_TRUE(down.ceil_mode);
  EXPECT_FALSE(down.count_include_pad);
  EXPECT_EQ(node_named(graph, "layer3.0.conv2.rsoftmax").attr<RadixAttrs>(), (RadixAttrs{2, 1}));
  // Weights are constants named by their checkpoint key.
  const Node& fc1 = node_named(graph, "layer1.0.conv2.fc1");
  ASSERT_EQ(fc1.inputs.size(), 3u);
  EXPECT_EQ(graph.value(fc1.inputs[1]).name, "layer1.0.conv2.fc1.weight");
  EXPECT_EQ(graph.value(fc1.inputs[2]).name, "layer1.0.conv2.fc1.bias");
}

TEST(TimmResNest, AnyBatch) {
  const Graph graph = build_timm_resnest(testing::resnest_checkpoint(small_spec()), config_for(10), -1);
  verify(graph);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{-1, 10}));
  EXPECT_EQ(graph.value(graph.inputs()[0]).shape, (Shape{-1, 3, 224, 224}));
}

struct Variant {
  std::string label;
  ResNestSpec spec;
};

// Names the variant in test output instead of dumping its bytes.
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.label; }

class TimmResNestVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(TimmResNestVariants, InfersAndBuilds) {
  const ResNestSpec& spec = GetParam().spec;
  const auto weights = testing::resnest_checkpoint(spec);
  const ModelConfig config = config_for(spec.num_classes);
  const ResNestArch arch = infer_resnest_arch(weights, config);
  const bool deep = spec.stem != testing::StemType::kPlain;
  EXPECT_EQ(arch.stem.deep, deep);
  EXPECT_EQ(arch.stem.in_channels, spec.in_chans);
  ASSERT_EQ(arch.stages.size(), spec.layers.size());
  std::size_t blocks = 0;
  std::size_t downsamples = 0;
  std::int64_t in_channels = deep ? spec.stem_width * 2 : 64;
  EXPECT_EQ(arch.stem.widths.back(), in_channels);
  for (std::size_t s = 0; s < spec.layers.size(); ++s) {
    SCOPED_TRACE("stage " + std::to_string(s + 1));
    const std::int64_t group_width = spec.channels[s] * spec.base_width / 64 * spec.cardinality;
    const std::int64_t out_channels = spec.channels[s] * 4;
    const ResNestStageArch& stage = arch.stages[s];
    EXPECT_EQ(stage.depth, spec.layers[s]);
    EXPECT_EQ(stage.in_channels, in_channels);
    EXPECT_EQ(stage.width, group_width);
    EXPECT_EQ(stage.out_channels, out_channels);
    EXPECT_EQ(stage.radix, spec.radix);
    EXPECT_EQ(stage.cardinality, spec.cardinality);
    EXPECT_EQ(stage.attention_width,
              testing::make_divisible(static_cast<double>(group_width * spec.radix) * 0.25, 8, 32));
    const bool projects = s > 0 || in_channels != out_channels;
    const ShortcutKind projection = spec.avg_down ? ShortcutKind::kAvgPoolConv : ShortcutKind::kConv;
    EXPECT_EQ(stage.shortcut.kind, projects ? projection : ShortcutKind::kIdentity);
    blocks += static_cast<std::size_t>(spec.layers[s]);
    downsamples += projects ? 1 : 0;
    in_channels = out_channels;
  }

  const Graph graph = build_timm_resnest(weights, config, 1);
  verify(graph);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{1, spec.num_classes}));
  EXPECT_EQ(static_cast<std::int64_t>(graph.parameter_count()), testing::float_parameter_count(weights));
  const std::size_t stem_convs = deep ? 3 : 1;
  EXPECT_EQ(count_ops(graph, OpKind::kConv2d), stem_convs + blocks * 5 + downsamples);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixWeightedSum), blocks);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixSum), spec.radix > 1 ? blocks : 0);
  EXPECT_EQ(count_ops(graph, OpKind::kRadixSoftmax), spec.radix > 1 ? blocks : 0);
  // ReLUs: the stem's, four per block (act1, conv2.act0, conv2.act1, act3); timm's RadixSoftmax is a
  // sigmoid for radix 1.
  EXPECT_EQ(count_ops(graph, OpKind::kActivation),
            (deep ? 3 : 1) + blocks * 4 + (spec.radix == 1 ? blocks : 0));
}

ResNestSpec variant(std::vector<std::int64_t> layers, std::vector<std::int64_t> channels, std::int64_t radix,
                    std::int64_t cardinality, std::int64_t base_width = 64) {
  ResNestSpec spec = small_spec();
  spec.layers = std::move(layers);
  spec.channels = std::move(channels);
  spec.radix = radix;
  spec.cardinality = cardinality;
  spec.base_width = base_width;
  return spec;
}

std::vector<Variant> variants() {
  std::vector<Variant> list = {
      {"OneBlockPerStage", variant({1, 1, 1, 1}, {16, 32, 64, 128}, 2, 1)},
      {"Radix4Cardinality2", variant({1, 1, 1, 1}, {16, 32, 64, 128}, 4, 2)},
      {"Radix3", variant({1, 2, 1, 1}, {24, 48, 96, 192}, 3, 1)},
      {"Radix1Cardinality4", variant({1, 1, 2, 1}, {16, 32, 64, 128}, 1, 4, 24)},
      {"Radix2Cardinality2", variant({2, 1, 1, 1}, {16, 32, 64, 128}, 2, 2)},
      // Every stage as wide as the last, as in the reduced 4s2x40d golden model.
      {"EqualStageWidths", variant({1, 1, 1, 1}, {32, 32, 32, 32}, 4, 2, 40)},
      {"ThreeStages", variant({2, 1, 1}, {16, 32, 64}, 2, 1)},
  };
  ResNestSpec plain = small_spec();
  plain.stem = testing::StemType::kPlain;
  plain.avg_down = false;
  list.push_back({"PlainStemConvDownsample", plain});
  ResNestSpec wide_stem = small_spec();
  wide_stem.stem_width = 64;
  wide_stem.in_chans = 1;
  list.push_back({"WideStemOneChannel", wide_stem});
  ResNestSpec tiered = small_spec();
  tiered.stem = testing::StemType::kDeepTiered;
  list.push_back({"TieredStem", tiered});
  return list;
}

INSTANTIATE_TEST_SUITE_P(Reduced, TimmResNestVariants, ::testing::ValuesIn(variants()),
                         [](const auto& test_info) { return test_info.param.label; });

TEST(TimmResNest, AvdFirstComesFromTheArchitectureName) {
  // resnest50d_4s2x40d's block shapes (radix 4, cardinality 2, base width 40), fewer blocks.
  ResNestSpec spec = variant({1, 1, 1, 1}, {64, 128, 256, 512}, 4, 2, 40);
  const auto weights = testing::resnest_checkpoint(spec);
  const ModelConfig config = config_for(spec.num_classes, "resnest50d_4s2x40d");
  const ResNestArch arch = infer_resnest_arch(weights, config);
  EXPECT_TRUE(arch.avd_first);
  EXPECT_EQ(arch.stages[0].width, 80);
  EXPECT_EQ(arch.stages[0].attention_width, 80);
  const Graph graph = build_timm_resnest(weights, config, 1);
  verify(graph);
  EXPECT_TRUE(has_node(graph, "layer2.0.avd_first"));
  EXPECT_FALSE(has_node(graph, "layer2.0.avd_last"));
  EXPECT_EQ(output_shape(graph, "layer2.0.avd_first"), (Shape{1, 160, 28, 28}));
  EXPECT_EQ(node_named(graph, "layer2.0.conv2.conv").attr<ConvAttrs>().groups, 8);
  EXPECT_EQ(node_named(graph, "layer2.0.conv2.fc1").attr<ConvAttrs>().groups, 2);
  EXPECT_TRUE(infer_resnest_arch(weights, config_for(spec.num_classes, "resnest50d_4s2x40d.in1k")).avd_first);
}

TEST(TimmResNest, HalfPrecisionCheckpoint) {
  auto weights = testing::resnest_checkpoint(small_spec());
  bool half = false;
  for (auto& [key, tensor] : weights) {
    if (tensor.dtype() != DType::kF32) continue;
    tensor = tensor.to(half ? DType::kF16 : DType::kBF16);
    half = !half;
  }
  const Graph graph = build_timm_resnest(weights, config_for(10), 1);
  verify(graph);
  for (const Value& value : graph.values()) {
    if (value.is_constant()) {
      EXPECT_EQ(value.constant.dtype(), DType::kF32) << value.name;
    }
  }
}

TEST(TimmResNest, MissingKey) {
  auto weights = testing::resnest_checkpoint(small_spec());
  weights.erase("layer3.1.conv2.fc1.bias");
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "checkpoint key 'layer3.1.conv2.fc1.bias': missing (needed for layer layer3.1.conv2.fc1)");
}

TEST(TimmResNest, MissingBlockLeavesAGap) {
  auto weights = testing::resnest_checkpoint(small_spec());
  std::erase_if(weights, [](const auto& entry) { return entry.first.starts_with("layer3.1."); });
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "checkpoint keys 'layer3.*': indices are not 0..1 (no 'layer3.1.*' keys)");
}

TEST(TimmResNest, UnexpectedKey) {
  auto weights = testing::resnest_checkpoint(small_spec());
  weights["layer2.0.se.fc1.weight"] = Tensor(DType::kF32, {8, 32, 1, 1});
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "unexpected checkpoint keys: layer2.0.se.fc1.weight");
}

TEST(TimmResNest, WrongShape) {
  auto weights = testing::resnest_checkpoint(small_spec());
  // A later block disagreeing with the first block of its stage.
  weights["layer3.2.conv2.fc1.weight"] = Tensor(DType::kF32, {32, 60, 1, 1});
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "checkpoint key 'layer3.2.conv2.fc1.weight': expected shape [32, 64, 1, 1], got [32, 60, 1, 1]");
}

TEST(TimmResNest, InconsistentSplitAttentionShape) {
  auto weights = testing::resnest_checkpoint(small_spec());
  // 40 output channels are no multiple of the split width 32 (conv3's inputs).
  weights["layer2.0.conv2.conv.weight"] = Tensor(DType::kF32, {40, 16, 3, 3});
  const std::string message = error_of([&] { build_timm_resnest(weights, config_for(10), 1); });
  EXPECT_EQ(message.rfind(
                "checkpoint key 'layer2.0.conv2.conv.weight': expected output channels a multiple of 32", 0),
            0u)
      << message;
}

TEST(TimmResNest, WrongDtype) {
  auto weights = testing::resnest_checkpoint(small_spec());
  weights["layer4.0.bn3.running_var"] = Tensor(DType::kI64, {512});
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "checkpoint key 'layer4.0.bn3.running_var': expected dtype F32, F16 or BF16, got I64");
}

TEST(TimmResNest, ClassCountMustMatchTheConfig) {
  const auto weights = testing::resnest_checkpoint(small_spec());
  EXPECT_EQ(
      error_of([&] { build_timm_resnest(weights, config_for(1000), 1); }),
      "checkpoint key 'fc.weight': expected 1000 classes (num_classes of the config), got shape [10, 512]");
}

TEST(TimmResNest, NotAResNest) {
  testing::ResNetSpec resnet;
  resnet.layers = {1, 1, 1, 1};
  resnet.num_classes = 10;
  const auto weights = testing::resnet_checkpoint(resnet);
  EXPECT_EQ(error_of([&] { build_timm_resnest(weights, config_for(10), 1); }),
            "checkpoint key 'layer1.0.conv2.conv.weight': missing (needed for layer layer1.0.conv2.conv)");
}

}  // namespace
}  // namespace kiln
