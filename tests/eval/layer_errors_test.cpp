// Per-layer errors: every layer exposed, matched by name, and the layer that was changed comes first.
#include "eval/layer_errors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "eval_test_models.h"
#include "io/npy.h"
#include "backends/backend.h"

namespace kiln {
namespace {

using testing::cpu_backend_names;

using testing::perturbed;
using testing::seeded_tensor;
using testing::small_plan;

TEST(LayerTap, ExposesEveryLayerInTopologicalOrder) {
  const Plan plan = small_plan();
  LayerTap tap(plan, "cpu-reference", 2);
  std::vector<std::string> names;
  for (const auto& layer : tap.layers()) names.push_back(layer.name);
  EXPECT_EQ(names, (std::vector<std::string>{"stem", "stem.act", "block.conv", "block.add", "block.act",
                                             "pool", "flatten", "fc"}));
  EXPECT_EQ(tap.layers().back().output, 0u);  // the plan's own output is not exposed twice
  const auto outputs = tap.run(seeded_tensor({2, 3, 16, 16}, 7, 2.0f));
  EXPECT_EQ(outputs.size(), 8u);
  for (const auto& layer : tap.layers())
    EXPECT_EQ(outputs.at(layer.output).shape(), layer.shape) << layer.name;
  EXPECT_EQ(tap.layers()[2].shape, (Shape{2, 16, 16, 16}));
}

// Every backend returns every exposed layer in plain NCHW: its outputs match the reference executor's,
// which a blocked layout (nChw8c and the like) read as NCHW would not.
TEST(LayerTap, EveryBackendReturnsPlainLayoutsForEveryLayer) {
  const Plan plan = testing::tiny_resnest_plan(Precision::kF32);
  const Tensor input = read_npy(testing::kGoldenTiny / "input.npy");
  const Tensor one =
      input.dim(0) == 1 ? input : Tensor::from_f32({1, 3, 224, 224}, input.f32().subspan(0, 3 * 224 * 224));
  LayerTap reference(plan, "cpu-reference", 1);
  const auto expected = reference.run(one);
  for (const auto name : cpu_backend_names()) {
    SCOPED_TRACE(std::string(name));
    LayerTap tap(plan, std::string(name), 1);
    ASSERT_EQ(tap.layers().size(), reference.layers().size());
    LayerErrorAccumulator accumulator(tap, reference);
    accumulator.add(tap.run(one), expected);
    const LayerErrorReport report = accumulator.report();
    EXPECT_EQ(report.layers.size(), plan.graph.live_node_count());
    EXPECT_TRUE(report.unmatched.empty());
    for (const auto& layer : report.layers) EXPECT_LT(layer.relative_error, 1e-4) << layer.name;
  }
}

TEST(LayerErrors, ThePerturbedLayerComesFirst) {
  const Plan plan = small_plan();
  const Plan changed = perturbed(plan, "block.conv.weight", 0.5f);
  for (const auto backend : cpu_backend_names()) {
    SCOPED_TRACE(std::string(backend));
    LayerTap reference(plan, std::string(backend), 1);
    LayerTap tap(changed, std::string(backend), 1);
    LayerErrorAccumulator accumulator(tap, reference);
    for (std::uint32_t seed = 10; seed < 13; ++seed) {
      const Tensor input = seeded_tensor({1, 3, 16, 16}, seed, 2.0f);
      accumulator.add(tap.run(input), reference.run(input));
    }
    const LayerErrorReport report = accumulator.report();
    EXPECT_EQ(report.images, 3u);
    EXPECT_EQ(report.plan_layers, 8u);
    ASSERT_EQ(report.layers.size(), 8u);
    EXPECT_EQ(report.layers.front().name, "block.conv");
    EXPECT_GT(report.layers.front().relative_error, 0.05);
    for (std::size_t i = 1; i < report.layers.size(); ++i) {
      EXPECT_FALSE(error_greater(report.layers[i].relative_error, report.layers[i - 1].relative_error));
    }
    // Layers before the change are untouched.
    for (const auto& layer : report.layers) {
      if (layer.name == "stem" || layer.name == "stem.act") {
        EXPECT_EQ(layer.relative_error, 0.0) << layer.name;
        EXPECT_EQ(layer.max_abs_error, 0.0) << layer.name;
      }
      EXPECT_EQ(layer.non_finite.total(), 0) << layer.name;
    }
  }
}

TEST(LayerErrors, LayersMissingFromTheReferenceOrOfAnotherShapeAreNotCompared) {
  const Plan plan = small_plan();
  Plan renamed = plan;
  renamed.graph.node(*renamed.graph.find_node("block.add")).name = "block.add_renamed";
  LayerTap tap(renamed, "cpu-reference", 1);
  LayerTap reference(plan, "cpu-reference", 1);
  LayerErrorAccumulator accumulator(tap, reference);
  const Tensor input = seeded_tensor({1, 3, 16, 16}, 3, 1.0f);
  accumulator.add(tap.run(input), reference.run(input));
  const LayerErrorReport report = accumulator.report();
  EXPECT_EQ(report.layers.size(), 7u);
  EXPECT_EQ(report.unmatched, (std::vector<std::string>{"block.add_renamed"}));
  for (const auto& layer : report.layers) EXPECT_EQ(layer.relative_error, 0.0) << layer.name;

  LayerTap wider(small_plan(16, 10, 8), "cpu-reference", 1);
  LayerErrorAccumulator shapes(wider, reference);
  const LayerErrorReport mismatched = shapes.report();
  // Every layer but fc has a channel dimension, 8 against 16; fc gives 10 classes in both.
  EXPECT_EQ(mismatched.shape_mismatch.size(), 7u);
  ASSERT_EQ(mismatched.layers.size(), 1u);
  EXPECT_EQ(mismatched.layers.front().name, "fc");
}

// An FP8 plan against its fp32 original: the quantize / dequantize points are not exposed, every layer
// is matched by name, and the FP8 layer is where the error starts.
TEST(LayerErrors, Fp8QuantizePointsAreNotComparedAndTheFp8LayerLeads) {
  const Plan plan = small_plan();
  const Plan fp8 = testing::small_fp8_plan();
  for (const auto backend : cpu_backend_names()) {
    SCOPED_TRACE(std::string(backend));
    LayerTap tap(fp8, std::string(backend), 1);
    LayerTap reference(plan, std::string(backend), 1);
    EXPECT_EQ(tap.layers().size(), 8u);
    for (const auto& layer : tap.layers()) {
      EXPECT_NE(layer.op, OpKind::kQuantize);
      EXPECT_NE(layer.op, OpKind::kDequantize);
    }
    LayerErrorAccumulator accumulator(tap, reference);
    const Tensor input = seeded_tensor({1, 3, 16, 16}, 21, 2.0f);
    accumulator.add(tap.run(input), reference.run(input));
    const LayerErrorReport report = accumulator.report();
    EXPECT_TRUE(report.unmatched.empty());
    ASSERT_EQ(report.layers.size(), 8u);
    EXPECT_EQ(report.layers.front().name, "block.conv");
    EXPECT_GT(report.layers.front().relative_error, 1e-3);  // E4M3 keeps 3 mantissa bits
    EXPECT_LT(report.layers.front().relative_error, 0.2);
    for (const auto& layer : report.layers) {
      if (layer.name == "stem" || layer.name == "stem.act") {
        EXPECT_EQ(layer.relative_error, 0.0) << layer.name;
      }
    }
  }
}

TEST(LayerErrors, NonFiniteLayersAreFoundInOrder) {
  const Plan plan = small_plan();
  LayerTap tap(plan, "cpu-reference", 1);
  Tensor input = seeded_tensor({1, 3, 16, 16}, 3, 1.0f);
  EXPECT_EQ(find_non_finite_layers(tap, tap.run(input)).count, 0u);
  input.mutable_f32()[5] = std::numeric_limits<float>::quiet_NaN();
  const NonFiniteLayers found = find_non_finite_layers(tap, tap.run(input));
  EXPECT_EQ(found.first, "stem");
  EXPECT_GE(found.count, 1u);
}

}  // namespace
}  // namespace kiln
