// The operator table (graph/op_info.h): complete, consistent, and describing operators as plan files,
// profiles, the verifier and eliminate_identity have always read them.
#include "graph/op_info.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {
namespace {

TEST(OpInfo, EveryOperatorHasItsRowAndANameThatRoundTrips) {
  ASSERT_EQ(kOpTable.size(), static_cast<std::size_t>(kOpKindCount));
  std::set<std::string_view> names;
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto op = static_cast<OpKind>(i);
    const OpInfo& info = op_info(op);
    EXPECT_EQ(info.op, op);
    EXPECT_FALSE(info.name.empty()) << i;
    EXPECT_TRUE(names.insert(info.name).second) << "two operators are named " << info.name;
    EXPECT_EQ(op_kind_name(op), info.name);
    EXPECT_EQ(op_kind_from_name(info.name), op) << info.name;
  }
  EXPECT_FALSE(op_kind_from_name("nonsense").has_value());
  EXPECT_FALSE(op_kind_from_name("").has_value());
}

TEST(OpInfo, EveryRowNamesAKnownLayerGroupAndAttributeStruct) {
  for (const OpInfo& info : kOpTable) {
    EXPECT_NE(std::find(kLayerGroups.begin(), kLayerGroups.end(), info.layer_group), kLayerGroups.end())
        << info.name << ": unknown layer group '" << info.layer_group << "'";
    EXPECT_LT(info.attributes, kAttributeStructCount) << info.name;
  }
  const std::set<std::string_view> struct_names(kAttributeStructNames.begin(), kAttributeStructNames.end());
  EXPECT_EQ(struct_names.size(), kAttributeStructCount) << "two attribute structs share a name";
  EXPECT_EQ(kAttributeStructNames[Attributes(PoolAttrs{}).index()], "pool");
  EXPECT_EQ(kAttributeIndex<DetectAttrs>, Attributes(DetectAttrs{}).index());
}

TEST(OpInfo, AValueWithoutARowIsReportedNotRead) {
  const auto beyond = static_cast<OpKind>(kOpKindCount);
  EXPECT_THROW(op_info(beyond), Error);
  EXPECT_EQ(op_kind_name(beyond), "unknown");
}

// Plan files store these names and kiln study reports these groups: a change breaks old plans and makes
// profiles incomparable.
TEST(OpInfo, StoredNamesAndProfileGroupsAreUnchanged) {
  const std::map<std::string_view, std::string_view> group_of = {
      {"conv2d", "convolution"},
      {"batch_norm", "other"},
      {"activation", "other"},
      {"add", "other"},
      {"max_pool2d", "pooling"},
      {"avg_pool2d", "pooling"},
      {"global_avg_pool", "pooling"},
      {"flatten", "other"},
      {"linear", "other"},
      {"radix_sum", "split-attention tail"},
      {"radix_softmax", "split-attention tail"},
      {"radix_weighted_sum", "split-attention tail"},
      {"quantize", "quantization"},
      {"dequantize", "quantization"},
      {"channel_scale", "other"},
      {"concat", "data movement"},
      {"channel_slice", "data movement"},
      {"upsample", "data movement"},
      {"attention", "attention"},
      {"detect_decode", "detection head"},
  };
  for (const auto& [name, group] : group_of) {
    const std::optional<OpKind> op = op_kind_from_name(name);
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_EQ(op_info(*op).layer_group, group) << name;
  }
}

TEST(OpInfo, WeightsAreTheInputsAfterTheActivationOrEveryInputOfADequantize) {
  for (const OpKind op : {OpKind::kConv2d, OpKind::kLinear, OpKind::kBatchNorm}) {
    EXPECT_FALSE(op_info(op).input_must_be_constant(0)) << op_kind_name(op);
    for (std::size_t k = 1; k < 5; ++k)
      EXPECT_TRUE(op_info(op).input_must_be_constant(k)) << op_kind_name(op);
  }
  EXPECT_TRUE(op_info(OpKind::kDequantize).input_must_be_constant(0));
  EXPECT_TRUE(op_info(OpKind::kDequantize).input_must_be_constant(1));
  const std::set<OpKind> with_weights = {OpKind::kConv2d, OpKind::kLinear, OpKind::kBatchNorm,
                                         OpKind::kDequantize};
  for (const OpInfo& info : kOpTable) {
    if (with_weights.count(info.op) != 0) continue;
    for (std::size_t k = 0; k < 3; ++k) EXPECT_FALSE(info.input_must_be_constant(k)) << info.name;
  }
}

TEST(OpInfo, IdentityRulesBelongToPoolsFlattenRadixSumAndActivation) {
  const std::set<OpKind> with_rule = {OpKind::kMaxPool2d, OpKind::kAvgPool2d, OpKind::kFlatten,
                                      OpKind::kRadixSum, OpKind::kActivation};
  for (const OpInfo& info : kOpTable) {
    EXPECT_EQ(info.computes_identity != nullptr, with_rule.count(info.op) != 0) << info.name;
  }
}

TEST(OpInfo, IdentityRulesJudgeTheNodesAttributesAndShapes) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const auto rule_says = [&](OpKind op, ValueId input, Attributes attrs) {
    const ValueId out = graph.add_node(op, cat("n", graph.nodes().size()), {input}, attrs);
    return op_info(op).computes_identity(graph, graph.node(graph.value(out).producer));
  };
  PoolAttrs unit;
  EXPECT_TRUE(rule_says(OpKind::kMaxPool2d, x, unit));
  PoolAttrs unit_ceil = unit;
  unit_ceil.ceil_mode = true;
  unit_ceil.count_include_pad = false;
  EXPECT_TRUE(rule_says(OpKind::kAvgPool2d, x, unit_ceil));
  PoolAttrs strided = unit;
  strided.stride = {2, 1};
  EXPECT_FALSE(rule_says(OpKind::kAvgPool2d, x, strided));
  PoolAttrs window = unit;
  window.kernel = {1, 2};
  EXPECT_FALSE(rule_says(OpKind::kMaxPool2d, x, window));
  PoolAttrs padded = unit;
  padded.kernel = {3, 3};
  padded.stride = {1, 1};
  padded.padding = {0, 0, 0, 1};
  EXPECT_FALSE(rule_says(OpKind::kMaxPool2d, x, padded));
  EXPECT_TRUE(rule_says(OpKind::kRadixSum, x, RadixAttrs{1, 1}));
  EXPECT_FALSE(rule_says(OpKind::kRadixSum, x, RadixAttrs{2, 1}));
  EXPECT_TRUE(rule_says(OpKind::kActivation, x, ActivationAttrs{Activation::kNone}));
  EXPECT_FALSE(rule_says(OpKind::kActivation, x, ActivationAttrs{Activation::kSilu}));
  const ValueId flat = graph.add_node(OpKind::kFlatten, "flat", {x});  // [N, 144]
  EXPECT_FALSE(op_info(OpKind::kFlatten).computes_identity(graph, graph.node(graph.value(flat).producer)));
  EXPECT_TRUE(rule_says(OpKind::kFlatten, flat, {}));
}

}  // namespace
}  // namespace kiln
