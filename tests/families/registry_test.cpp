#include "families/registry.h"

#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "tests/families/family_test_util.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

TEST(Registry, ListsTheFamilies) {
  std::vector<std::string_view> names;
  for (const auto& family : families()) names.push_back(family.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"timm_resnest", "timm_resnet", "timm_efficientnet"}));
  EXPECT_EQ(testing::error_of([] { find_family("vit"); }),
            "unknown family 'vit' (known: timm_resnest, timm_resnet, timm_efficientnet, yolov10)");
  EXPECT_NE(find_detector("yolov10"), nullptr);
  EXPECT_EQ(find_detector("timm_resnet"), nullptr);
}

TEST(Registry, DefaultConfigsFollowTimmsPretrainedCfg) {
  const ModelConfig& resnest = find_family("timm_resnest").default_config;
  EXPECT_EQ(resnest.architecture, "resnest50d");
  EXPECT_EQ(resnest.num_classes, 1000);
  EXPECT_EQ(resnest.preprocess.input_size, 224);
  EXPECT_EQ(resnest.preprocess.interpolation, Interpolation::kBilinear);
  EXPECT_DOUBLE_EQ(resnest.preprocess.crop_pct, 0.875);
  EXPECT_EQ(resnest.preprocess.mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(resnest.preprocess.std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));

  const ModelConfig& resnet = find_family("timm_resnet").default_config;
  EXPECT_EQ(resnet.architecture, "resnet50");
  EXPECT_EQ(resnet.num_classes, 1000);
  EXPECT_EQ(resnet.preprocess.input_size, 224);
  EXPECT_EQ(resnet.preprocess.interpolation, Interpolation::kBicubic);
  EXPECT_DOUBLE_EQ(resnet.preprocess.crop_pct, 0.95);
  EXPECT_EQ(resnet.preprocess.mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(resnet.preprocess.std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));

  const ModelConfig& efficientnet = find_family("timm_efficientnet").default_config;
  EXPECT_EQ(efficientnet.architecture, "efficientnet_b0");
  EXPECT_EQ(efficientnet.num_classes, 1000);
  EXPECT_EQ(efficientnet.preprocess.input_size, 224);
  EXPECT_EQ(efficientnet.preprocess.interpolation, Interpolation::kBicubic);
  EXPECT_DOUBLE_EQ(efficientnet.preprocess.crop_pct, 0.875);
  EXPECT_EQ(efficientnet.preprocess.mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(efficientnet.preprocess.std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));
}

TEST(Registry, BuildsThroughTheRegistry) {
  testing::ResNestSpec spec;
  spec.layers = {1, 1, 1, 1};
  const FamilyInfo& family = find_family("timm_resnest");
  const Graph graph = family.build(testing::resnest_checkpoint(spec), family.default_config, 1);
  verify(graph);
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, (Shape{1, 1000}));
}

}  // namespace
}  // namespace kiln
