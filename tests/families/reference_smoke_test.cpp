// Built graphs run on the CPU reference executor. The numbers are checked against timm elsewhere
// (golden files); here only that every layer executes and yields finite logits of the right shape.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/executor.h"
#include "families/timm_efficientnet/builder.h"
#include "families/timm_resnest/builder.h"
#include "families/timm_resnet/builder.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

ModelConfig small_config(std::int64_t num_classes) {
  ModelConfig config;
  config.num_classes = num_classes;
  config.preprocess.input_size = 32;
  return config;
}

Tensor image_batch(std::int64_t batch, std::int64_t size) {
  Tensor tensor(DType::kF32, {batch, 3, size, size});
  float value = -1.0f;
  for (float& element : tensor.mutable_f32()) {
    element = value;
    value = value > 1.0f ? -1.0f : value + 0.013f;
  }
  return tensor;
}

void expect_finite_logits(const Graph& graph, std::int64_t batch, std::int64_t num_classes) {
  const auto outputs = run_reference(graph, {image_batch(batch, 32)});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape(), (Shape{batch, num_classes}));
  for (const float logit : outputs[0].f32()) ASSERT_TRUE(std::isfinite(logit));
}

TEST(ReferenceSmoke, ResNestRadix2) {
  testing::ResNestSpec spec;
  spec.layers = {1, 1, 1, 1};
  spec.channels = {8, 16, 32, 64};
  spec.stem_width = 8;
  spec.num_classes = 5;
  expect_finite_logits(build_timm_resnest(testing::resnest_checkpoint(spec), small_config(5), 2), 2, 5);
}

TEST(ReferenceSmoke, ResNestRadix1Cardinality2) {
  testing::ResNestSpec spec;
  spec.layers = {1, 1, 1, 1};
  spec.channels = {8, 16, 32, 64};
  spec.stem_width = 8;
  spec.radix = 1;
  spec.cardinality = 2;
  spec.num_classes = 5;
  expect_finite_logits(build_timm_resnest(testing::resnest_checkpoint(spec), small_config(5), 2), 2, 5);
}

TEST(ReferenceSmoke, EfficientNet) {
  testing::EfficientNetSpec spec;
  spec.channel_multiplier = 0.25;
  spec.depth_multiplier = 0.5;
  spec.num_classes = 5;
  expect_finite_logits(build_timm_efficientnet(testing::efficientnet_checkpoint(spec), small_config(5), 2), 2,
                       5);
}

TEST(ReferenceSmoke, ResNet) {
  testing::ResNetSpec spec;
  spec.layers = {1, 1, 1, 1};
  spec.channels = {8, 16, 32, 64};
  spec.stem = testing::StemType::kDeep;
  spec.stem_width = 8;
  spec.avg_down = true;
  spec.num_classes = 5;
  expect_finite_logits(build_timm_resnet(testing::resnet_checkpoint(spec), small_config(5), 2), 2, 5);
}

}  // namespace
}  // namespace kiln
