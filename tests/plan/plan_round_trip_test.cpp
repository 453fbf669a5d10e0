// Writing a plan and reading it back gives the same graph, settings and bundle, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "reference/executor.h"
#include "core/error.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"

namespace kiln {
namespace {

using plan_test::TempDir;

Tensor test_input(Shape shape) {
  Tensor tensor(DType::kF32, std::move(shape));
  float value = -2.0f;
  for (float& element : tensor.mutable_f32()) element = (value += 0.0371f);
  return tensor;
}

template <std::size_t... I>
std::size_t attribute_kinds(const Graph& graph, std::index_sequence<I...> /*alternatives*/) {
  std::set<std::size_t> seen;
  for (const Node& node : graph.nodes()) {
    // Every struct must carry something other than its defaults, or a dropped field could pass.
    std::visit(
        [&](const auto& attrs) {
          using A = std::decay_t<decltype(attrs)>;
          if constexpr (!std::is_same_v<A, std::monostate>) {
            EXPECT_FALSE(attrs == A{}) << node.name;
          }
        },
        node.attrs);
    seen.insert(node.attrs.index());
  }
  return seen.size();
}

TEST(PlanRoundTrip, KeepsEveryOperatorAttributeAndPrecision) {
  const Plan original = plan_test::every_op_plan();
  std::set<OpKind> ops;
  std::set<Precision> precisions;
  for (const Node& node : original.graph.nodes()) {
    ops.insert(node.op);
    precisions.insert(node.precision);
  }
  ASSERT_EQ(ops.size(), static_cast<std::size_t>(kOpKindCount)) << "the test graph must use every operator";
  ASSERT_EQ(precisions.size(), 3u);
  ASSERT_EQ(attribute_kinds(original.graph, std::make_index_sequence<std::variant_size_v<Attributes>>()),
            std::variant_size_v<Attributes>)
      << "the test graph must use every attribute struct";

  const TempDir dir;
  write_plan(dir / "model.kplan", original);
  const Plan loaded = read_plan(dir / "model.kplan");
  plan_test::expect_same_graph(original.graph, loaded.graph);
  plan_test::expect_same_info(original.info, loaded.info);
  plan_test::expect_same_config(original.config, loaded.config);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.kplan"});
}

TEST(PlanRoundTrip, ReferenceOutputsAreBitIdentical) {
  const Plan original = plan_test::every_op_plan();
  const TempDir dir;
  write_plan(dir / "model.kplan", original);
  const Plan loaded = read_plan(dir / "model.kplan");

  const Tensor input = test_input({2, 4, 9, 9});
  const std::vector<Tensor> expected = run_reference(original.graph, {input});
  const std::vector<Tensor> actual = run_reference(loaded.graph, {input});
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].shape(), expected[i].shape());
    ASSERT_EQ(actual[i].nbytes(), expected[i].nbytes());
    EXPECT_EQ(std::memcmp(actual[i].bytes(), expected[i].bytes(), expected[i].nbytes()), 0) << "output " << i;
  }
  EXPECT_EQ(expected[0].shape(), (Shape{2, 5}));
  EXPECT_EQ(expected[1].shape(), (Shape{2, 4, 3, 5}));
  EXPECT_EQ(expected[2].shape(), (Shape{2, 2, 12, 24}));
  EXPECT_EQ(expected[3].shape(), (Shape{2, 5, 6}));
}

TEST(PlanRoundTrip, KeepsConstantsOfEveryStorageDtype) {
  const Plan original = plan_test::mixed_dtype_plan();
  std::set<DType> dtypes;
  for (const Value& value : original.graph.values()) {
    if (value.is_constant()) dtypes.insert(value.dtype);
  }
  ASSERT_EQ(dtypes, (std::set<DType>{DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3}));

  const TempDir dir;
  write_plan(dir / "mixed.kplan", original);
  const Plan loaded = read_plan(dir / "mixed.kplan");
  plan_test::expect_same_graph(original.graph, loaded.graph);
  for (const Value& value : loaded.graph.values()) {
    if (!value.is_constant()) continue;
    // Views into the file buffer, aligned for vector loads and never writable.
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(value.constant.bytes()) % 64, 0u) << value.name;
    Tensor copy = value.constant;
    EXPECT_THROW(copy.mutable_bytes(), Error);
  }
}

TEST(PlanRoundTrip, ConstantsOutliveThePlan) {
  const TempDir dir;
  write_plan(dir / "model.kplan", plan_test::every_op_plan());
  Tensor weight;
  {
    const Plan loaded = read_plan(dir / "model.kplan");
    const Node& conv = loaded.graph.node(*loaded.graph.find_node("conv1"));
    weight = loaded.graph.value(conv.inputs[1]).constant;
  }
  std::filesystem::remove(dir / "model.kplan");
  const Plan original = plan_test::every_op_plan();
  const Node& conv = original.graph.node(*original.graph.find_node("conv1"));
  const Tensor& expected = original.graph.value(conv.inputs[1]).constant;
  ASSERT_EQ(weight.nbytes(), expected.nbytes());
  EXPECT_EQ(std::memcmp(weight.bytes(), expected.bytes(), expected.nbytes()), 0);
}

TEST(PlanRoundTrip, SamePlanGivesByteIdenticalFiles) {
  const TempDir dir;
  write_plan(dir / "a.kplan", plan_test::every_op_plan());
  write_plan(dir / "b.kplan", plan_test::every_op_plan());
  const std::vector<std::byte> first = plan_test::read_bytes(dir / "a.kplan");
  EXPECT_EQ(first, plan_test::read_bytes(dir / "b.kplan"));

  // Reading and writing again changes nothing either.
  write_plan(dir / "c.kplan", read_plan(dir / "a.kplan"));
  EXPECT_EQ(first, plan_test::read_bytes(dir / "c.kplan"));

  // The stream writer gives the same bytes as the file writer.
  std::ostringstream out;
  write_plan(out, plan_test::every_op_plan(), "memory");
  const std::string text = out.str();
  ASSERT_EQ(text.size(), first.size());
  EXPECT_EQ(std::memcmp(text.data(), first.data(), first.size()), 0);
}

TEST(PlanRoundTrip, HeaderIsSortedCompactJsonWithNamedFields) {
  const TempDir dir;
  write_plan(dir / "model.kplan", plan_test::every_op_plan());
  const std::vector<std::byte> file = plan_test::read_bytes(dir / "model.kplan");
  const nlohmann::json header = plan_test::header_of(file);
  // The stored text is exactly what a compact, key-sorted dump gives.
  const std::string dumped = header.dump();
  ASSERT_LE(24 + dumped.size(), file.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()) + 24, dumped.size()), dumped);
  const nlohmann::json& conv = header["graph"]["layers"][0];
  EXPECT_EQ(conv["op"], "conv2d");
  EXPECT_EQ(conv["name"], "conv1");
  EXPECT_EQ(conv["precision"], "fp16");
  EXPECT_EQ(conv["attributes"]["conv"]["padding"], (nlohmann::json{1, 2, 0, 1}));
  EXPECT_EQ(conv["attributes"]["conv"]["activation"], "silu");
  EXPECT_EQ(conv["backend_data"]["layout"], "nhwc");
  EXPECT_EQ(header["build"]["passes"][0], "fold_batch_norm");
  EXPECT_EQ(header["bundle"]["config"]["label_names"][2], "café crème");
  EXPECT_EQ(header["blob"]["alignment"], 64);
  // Canonical value order: the input, then constants, then layer outputs.
  const nlohmann::json& values = header["graph"]["values"];
  EXPECT_EQ(values[0]["name"], "pixels");
  EXPECT_EQ(values[1]["name"], "conv1.weight");
  EXPECT_EQ(values[1]["data"]["offset"], 0);
  EXPECT_EQ(values[2]["name"], "conv1.bias");
  EXPECT_EQ(values[2]["data"]["offset"], 896);  // 864 bytes of conv1.weight, rounded up to 64
  EXPECT_EQ(values[2]["dtype"], "F32");
  EXPECT_EQ(header["graph"]["inputs"], (nlohmann::json{0}));
}

// A graph a pass has been through: a replaced weight, a dead layer. The plan holds what compact()
// keeps, renumbered canonically, and runs the same.
TEST(PlanRoundTrip, WritesWhatCompactKeeps) {
  Plan plan = plan_test::every_op_plan();
  Graph& graph = plan.graph;
  const NodeId conv = *graph.find_node("conv1");
  const NodeId fc = *graph.find_node("fc");
  const Tensor& old_weight = graph.value(graph.node(conv).inputs[1]).constant;
  Tensor scaled = old_weight.clone();
  for (float& element : scaled.mutable_f32()) element *= 0.5f;
  const ValueId folded = graph.add_constant("conv1.weight.scaled", scaled);
  graph.node(conv).inputs[1] = folded;
  const ValueId extra = graph.add_node(OpKind::kActivation, "unused", {graph.node(fc).output},
                                       ActivationAttrs{Activation::kSilu});
  graph.node(graph.value(extra).producer).dead = true;

  const TempDir dir;
  write_plan(dir / "model.kplan", plan);
  const Plan loaded = read_plan(dir / "model.kplan");
  Graph compacted = plan.graph;
  compacted.compact();
  plan_test::expect_same_graph(compacted, loaded.graph);
  EXPECT_EQ(loaded.graph.values().size(), compacted.values().size());
  EXPECT_EQ(loaded.graph.nodes().size(), compacted.nodes().size());
  EXPECT_FALSE(loaded.graph.find_node("unused").has_value());
  // Canonical order: inputs, then constants, then layer outputs.
  EXPECT_EQ(loaded.graph.inputs(), std::vector<ValueId>{0});
  bool seen_output = false;
  for (const Value& value : loaded.graph.values()) {
    if (value.producer != kNoNode) seen_output = true;
    if (value.is_constant()) {
      EXPECT_FALSE(seen_output) << value.name << " comes after a layer output";
    }
  }

  const Tensor input = test_input({1, 4, 9, 9});
  const auto expected = run_reference(compacted, {input});
  const auto actual = run_reference(loaded.graph, {input});
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i].nbytes(), expected[i].nbytes());
    EXPECT_EQ(std::memcmp(actual[i].bytes(), expected[i].bytes(), expected[i].nbytes()), 0);
  }
}

TEST(PlanRoundTrip, MinimalPlanWithDefaults) {
  Plan plan;
  const ValueId x = plan.graph.add_input("x", {-1, 3});
  plan.graph.mark_output(plan.graph.add_node(OpKind::kActivation, "relu", {x}, ActivationAttrs{}));
  const TempDir dir;
  write_plan(dir / "tiny.kplan", plan);
  const Plan loaded = read_plan(dir / "tiny.kplan");
  plan_test::expect_same_graph(plan.graph, loaded.graph);
  plan_test::expect_same_info(plan.info, loaded.info);
  plan_test::expect_same_config(plan.config, loaded.config);
  EXPECT_EQ(loaded.info.kiln_version, KILN_VERSION);
  EXPECT_TRUE(loaded.info.quantization.is_object());
}

// What the writer refuses, each with one line naming the file, and nothing written.
TEST(PlanWriter, RefusesPlansItCannotStore) {
  const TempDir dir;
  const auto expect_refused = [&](const Plan& plan, const std::string& expected) {
    const auto path = dir / "bad.kplan";
    try {
      write_plan(path, plan);
      ADD_FAILURE() << "expected an error containing: " << expected;
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(path.string() + ": cannot write the plan: "), std::string::npos) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_TRUE(dir.entries().empty());
  };

  Plan duplicate = plan_test::every_op_plan();
  duplicate.graph.node(*duplicate.graph.find_node("act1")).name = "bn1";
  expect_refused(duplicate, "two layers are named 'bn1'");

  Plan stray_data = plan_test::every_op_plan();
  stray_data.info.layer_data["no.such.layer"] = {{"tactic", 1}};
  expect_refused(stray_data, "'no.such.layer', which is not in the graph");

  Plan nan_epsilon = plan_test::every_op_plan();
  nan_epsilon.graph.node(*nan_epsilon.graph.find_node("bn1")).attr<BatchNormAttrs>().epsilon =
      std::numeric_limits<float>::quiet_NaN();
  expect_refused(nan_epsilon, "layer 'bn1': attribute 'epsilon' is nan");

  Plan bad_quantization = plan_test::every_op_plan();
  bad_quantization.info.quantization = nlohmann::json::array();
  expect_refused(bad_quantization, "quantization section must be a JSON object");

  Plan bad_digest = plan_test::every_op_plan();
  bad_digest.info.checkpoint_sha256 = "ABC";
  expect_refused(bad_digest, "not 64 lower-case hex digits");

  Plan bad_utf8 = plan_test::every_op_plan();
  bad_utf8.config.label_names[0] = "\xff\xfe";
  expect_refused(bad_utf8, "not valid UTF-8");

  Plan unverified = plan_test::every_op_plan();
  unverified.graph.value(unverified.graph.outputs()[0]).shape = {7, 7};
  expect_refused(unverified, "disagrees with inferred");
}

}  // namespace
}  // namespace kiln
