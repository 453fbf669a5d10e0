#include "families/common/checkpoint_reader.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace kiln {
namespace {

Tensor f32(Shape shape, float value) {
  Tensor tensor(DType::kF32, std::move(shape));
  for (float& element : tensor.mutable_f32()) element = value;
  return tensor;
}

// The message of the kiln::Error `action` throws; fails the test when it throws nothing.
template <typename Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

TEST(CheckpointReader, TakesAndConvertsHalfPrecision) {
  std::map<std::string, Tensor> weights;
  weights["a.weight"] = f32({2, 3}, 1.5f);
  weights["a.bias"] = f32({2}, -2.25f).to(DType::kF16);
  weights["b.weight"] = f32({4}, 0.75f).to(DType::kBF16);
  CheckpointReader reader(weights);
  EXPECT_TRUE(reader.has("a.weight"));
  EXPECT_FALSE(reader.has("a.missing"));
  EXPECT_EQ(reader.shape("a.weight"), (Shape{2, 3}));

  const Tensor weight = reader.take("a.weight", {2, 3});
  EXPECT_EQ(weight.dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(weight.f32()[5], 1.5f);
  const Tensor bias = reader.take("a.bias", {2});
  EXPECT_EQ(bias.dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(bias.f32()[1], -2.25f);
  const Tensor other = reader.take("b.weight", {4});
  EXPECT_EQ(other.dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(other.f32()[3], 0.75f);
  reader.finish();
}

TEST(CheckpointReader, MissingKeyNamesKeyAndLayer) {
  const std::map<std::string, Tensor> weights;
  CheckpointReader reader(weights);
  EXPECT_EQ(error_of([&] {
              reader.take("layer2.0.conv2.fc1.weight", {32, 64, 1, 1});
            }),
            "checkpoint key 'layer2.0.conv2.fc1.weight': missing (needed for layer layer2.0.conv2.fc1)");
  EXPECT_EQ(error_of([&] { reader.shape("fc.bias"); }),
            "checkpoint key 'fc.bias': missing (needed for layer fc)");
}

TEST(CheckpointReader, ShapeMismatchNamesKeyAndBothShapes) {
  std::map<std::string, Tensor> weights;
  weights["layer2.0.conv2.fc1.weight"] = f32({32, 60, 1, 1}, 0.f);
  CheckpointReader reader(weights);
  EXPECT_EQ(error_of([&] {
              reader.take("layer2.0.conv2.fc1.weight", {32, 64, 1, 1});
            }),
            "checkpoint key 'layer2.0.conv2.fc1.weight': expected shape [32, 64, 1, 1], got [32, 60, 1, 1]");
  EXPECT_EQ(error_of([&] { reader.shape("layer2.0.conv2.fc1.weight", 2); }),
            "checkpoint key 'layer2.0.conv2.fc1.weight': expected a rank-2 tensor, got shape [32, 60, 1, 1]");
}

TEST(CheckpointReader, RejectsNonFloatDtypes) {
  std::map<std::string, Tensor> weights;
  weights["bn.running_var"] = Tensor(DType::kI64, {8});
  weights["q.weight"] = Tensor(DType::kF8E4M3, {8});
  CheckpointReader reader(weights);
  EXPECT_EQ(error_of([&] { reader.take("bn.running_var", {8}); }),
            "checkpoint key 'bn.running_var': expected dtype F32, F16 or BF16, got I64");
  EXPECT_NE(error_of([&] { reader.take("q.weight", {8}); }).find("checkpoint key 'q.weight': expected dtype"),
            std::string::npos);
}

TEST(CheckpointReader, FinishListsUnusedKeysButNotBatchCounters) {
  std::map<std::string, Tensor> weights;
  weights["bn.weight"] = f32({4}, 1.f);
  weights["bn.num_batches_tracked"] = Tensor(DType::kI64, {});
  weights["se.fc.weight"] = f32({4, 4}, 1.f);
  weights["se.fc.bias"] = f32({4}, 1.f);
  CheckpointReader reader(weights);
  reader.take("bn.weight", {4});
  EXPECT_EQ(error_of([&] { reader.finish(); }), "unexpected checkpoint keys: se.fc.bias, se.fc.weight");
  reader.take("se.fc.weight", {4, 4});
  reader.take("se.fc.bias", {4});
  reader.finish();
}

TEST(CheckpointReader, FinishAbbreviatesLongLists) {
  std::map<std::string, Tensor> weights;
  for (int i = 0; i < 11; ++i) weights["extra" + std::to_string(i)] = f32({1}, 0.f);
  const CheckpointReader reader(weights);
  EXPECT_EQ(error_of([&] { reader.finish(); }),
            "unexpected checkpoint keys: extra0, extra1, extra10, extra2, extra3, extra4, extra5, extra6 (+3 "
            "more)");
}

TEST(CheckpointReader, ChildIndices) {
  std::map<std::string, Tensor> weights;
  for (const char* key : {"layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.1.conv1.weight",
                          "layer1.10.conv1.weight", "layer1.2.conv1.weight", "layer10.0.conv1.weight"}) {
    weights[key] = f32({1}, 0.f);
  }
  const CheckpointReader reader(weights);
  EXPECT_TRUE(reader.has_prefix("layer1."));
  EXPECT_FALSE(reader.has_prefix("layer2."));
  EXPECT_EQ(error_of([&] { reader.child_indices("layer1."); }),
            "checkpoint keys 'layer1.*': indices are not 0..3 (no 'layer1.3.*' keys)");
  EXPECT_EQ(reader.child_indices("layer10."), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(reader.child_indices("layer3.").empty());
}

TEST(CheckpointReader, LayerOfKey) {
  EXPECT_EQ(layer_of_key("layer1.0.conv2.fc1.weight"), "layer1.0.conv2.fc1");
  EXPECT_EQ(layer_of_key("weight"), "weight");
}

}  // namespace
}  // namespace kiln
