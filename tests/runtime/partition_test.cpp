// Partitioning a graph between a backend and the CPU fallback: the split into segments, a partitioned
// run against the whole graph on the reference backend, strict compiles and fully supported graphs. The
// backend under test is defined here: the reference backend, minus the nodes a predicate refuses.
#include "runtime/partition.h"

#include <gtest/gtest.h>

#include <random>

#include "backends/cpu/reference/reference_backend.h"
#include "core/error.h"
#include "picky_backend.h"
#include "runtime/engine.h"
#include "runtime/partitioned_model.h"

namespace kiln {
namespace {

using testing::PickyBackend;
using testing::refuse_op;

Tensor random_tensor(Shape shape, std::uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.mutable_f32()) v = dist(rng);
  return t;
}

ValueId conv3x3(Graph& g, const std::string& name, ValueId x, std::uint32_t seed) {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.padding = {1, 1, 1, 1};
  const std::int64_t c = g.value(x).shape[1];
  const ValueId w = g.add_constant(name + ".weight", random_tensor({c, c, 3, 3}, seed));
  return g.add_node(OpKind::kConv2d, name, {x, w}, a);
}

// x -> conv1 -> relu -> add1(relu, x) -> conv2 -> add2(conv2, add1): two residual adds.
Graph residual_graph() {
  Graph g;
  const ValueId x = g.add_input("x", {-1, 4, 6, 6});
  const ValueId relu =
      g.add_node(OpKind::kActivation, "relu", {conv3x3(g, "conv1", x, 1)}, ActivationAttrs{});
  const ValueId add1 = g.add_node(OpKind::kAdd, "add1", {relu, x}, AddAttrs{});
  const ValueId conv2 = conv3x3(g, "conv2", add1, 2);
  g.mark_output(g.add_node(OpKind::kAdd, "add2", {conv2, add1}, AddAttrs{}));
  return g;
}

std::vector<std::string> names_of(const Graph& graph, const std::vector<ValueId>& values) {
  std::vector<std::string> names;
  for (const ValueId v : values) names.push_back(graph.value(v).name);
  return names;
}

std::vector<std::string> node_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const NodeId id : graph.topological_order()) names.push_back(graph.node(id).name);
  return names;
}

using Names = std::vector<std::string>;

TEST(SplitGraph, MaximalRunsWithTheValuesCrossingBetweenThem) {
  const Graph graph = residual_graph();
  const PickyBackend backend(refuse_op(OpKind::kAdd));
  const std::vector<Segment> segments = split_graph(graph, place_on_backend(graph, backend));
  ASSERT_EQ(segments.size(), 4u);
  const int expected_placement[] = {0, 1, 0, 1};
  const Names expected_nodes[] = {{"conv1", "relu"}, {"add1"}, {"conv2"}, {"add2"}};
  const Names expected_inputs[] = {{"x"}, {"relu", "x"}, {"add1"}, {"conv2", "add1"}};
  const Names expected_outputs[] = {{"relu"}, {"add1"}, {"conv2"}, {"add2"}};
  for (std::size_t s = 0; s < segments.size(); ++s) {
    SCOPED_TRACE(s);
    const Segment& segment = segments[s];
    EXPECT_EQ(segment.placement, expected_placement[s]);
    EXPECT_EQ(node_names(segment.graph), expected_nodes[s]);
    EXPECT_EQ(names_of(graph, segment.inputs), expected_inputs[s]);
    EXPECT_EQ(names_of(segment.graph, segment.graph.inputs()), expected_inputs[s]);
    EXPECT_EQ(names_of(graph, segment.outputs), expected_outputs[s]);
    EXPECT_EQ(names_of(segment.graph, segment.graph.outputs()), expected_outputs[s]);
  }
  // Constants are copied in, sharing the whole graph's storage; shapes keep the batch as dim 0.
  const Graph& first = segments[0].graph;
  const ValueId weight = first.node(0).inputs[1];
  EXPECT_EQ(first.value(weight).name, "conv1.weight");
  EXPECT_EQ(first.value(weight).constant.f32().data(),
            graph.value(graph.node(0).inputs[1]).constant.f32().data());
  EXPECT_EQ(first.value(first.inputs()[0]).shape, (Shape{-1, 4, 6, 6}));
}

TEST(SplitGraph, KeepsEachPlacementTogetherAcrossIndependentBranches) {
  // Three branches off x, alternating placement by node id: in id order that would be three segments.
  Graph g;
  const ValueId x = g.add_input("x", {-1, 4, 2, 2});
  for (const char* name : {"a", "b", "c"})
    g.mark_output(g.add_node(OpKind::kActivation, name, {x}, ActivationAttrs{}));
  const std::vector<Segment> segments = split_graph(g, {1, 0, 1});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(node_names(segments[0].graph), (Names{"a", "c"}));
  EXPECT_EQ(node_names(segments[1].graph), (Names{"b"}));
}

TEST(SplitGraph, ConstantOnlyNodesGoBeforeTheirFirstReader) {
  // An FP8 weight path: the dequantize reads constants only and joins its convolution's segment.
  Graph g;
  const ValueId x = g.add_input("x", {-1, 4, 2, 2});
  const ValueId relu = g.add_node(OpKind::kActivation, "relu", {x}, ActivationAttrs{});
  const ValueId codes = g.add_constant("w.codes", Tensor(DType::kF8E4M3, {4, 4, 1, 1}));
  const ValueId scales = g.add_constant("w.scales", Tensor::from_f32({4}, std::vector<float>(4, 0.5f)));
  const ValueId w = g.add_node(OpKind::kDequantize, "w.dequantize", {codes, scales});
  const ValueId sig =
      g.add_node(OpKind::kActivation, "sigmoid", {relu}, ActivationAttrs{Activation::kSigmoid});
  g.mark_output(g.add_node(OpKind::kConv2d, "conv", {sig, w}, ConvAttrs{}));
  // In id order the dequantize would join relu's segment and its output cross to the convolution's.
  const std::vector<Segment> segments = split_graph(g, {1, 1, 0, 1});
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(node_names(segments[2].graph), (Names{"w.dequantize", "conv"}));
  EXPECT_EQ(names_of(g, segments[2].inputs), (Names{"sigmoid"}));
  EXPECT_TRUE(segments[0].outputs.size() == 1 && g.value(segments[0].outputs[0]).name == "relu");
}

TEST(PlaceOnBackend, RechecksEachSegmentInItsOwnGraph) {
  // This backend runs a ReLU only when a node of the same graph computes its input: in the whole
  // graph the add does, but the add runs on the fallback, so in its segment the ReLU reads an input.
  const PickyBackend backend([](const Graph& graph, const Node& node) {
    if (node.op == OpKind::kAdd) return true;
    return node.op == OpKind::kActivation && graph.value(node.inputs[0]).producer == kNoNode;
  });
  Graph g;
  const ValueId x = g.add_input("x", {-1, 4, 6, 6});
  const ValueId add = g.add_node(OpKind::kAdd, "add", {conv3x3(g, "conv", x, 3), x}, AddAttrs{});
  g.mark_output(g.add_node(OpKind::kActivation, "relu", {add}, ActivationAttrs{}));
  EXPECT_EQ(place_on_backend(g, backend), (std::vector<int>{0, 1, 1}));
}

TEST(PlaceOnBackend, ConstantOnlyNodesFollowTheirReadersToTheFallback) {
  const PickyBackend backend(refuse_op(OpKind::kConv2d));
  Graph g;
  const ValueId x = g.add_input("x", {-1, 4, 2, 2});
  const ValueId codes = g.add_constant("w.codes", Tensor(DType::kF8E4M3, {4, 4, 1, 1}));
  const ValueId scales = g.add_constant("w.scales", Tensor::from_f32({4}, std::vector<float>(4, 0.5f)));
  const ValueId w = g.add_node(OpKind::kDequantize, "w.dequantize", {codes, scales});
  const ValueId relu = g.add_node(OpKind::kActivation, "relu", {x}, ActivationAttrs{});
  g.mark_output(g.add_node(OpKind::kConv2d, "conv", {relu, w}, ConvAttrs{}));
  EXPECT_EQ(place_on_backend(g, backend), (std::vector<int>{1, 0, 1}));
}

TEST(PartitionedModel, RunsExactlyAsTheWholeGraphOnTheReference) {
  const Graph graph = residual_graph();
  const PickyBackend backend(refuse_op(OpKind::kAdd));
  const ReferenceBackend reference;
  CompileOptions options;
  options.batch = 2;
  const FallbackCompile compiled = compile_with_fallback(graph, backend, reference, options);
  ASSERT_NE(dynamic_cast<PartitionedModel*>(compiled.model.get()), nullptr);
  EXPECT_EQ(compiled.fallback_layers, (Names{"add1", "add2"}));
  EXPECT_EQ(backend.compiled_node_counts, (std::vector<std::size_t>{2, 1}));
  const Tensor x = random_tensor({2, 4, 6, 6}, 7);
  const auto ours = compiled.model->run({x});
  const auto whole = reference.compile(graph, options)->run({x});
  ASSERT_EQ(ours.size(), 1u);
  ASSERT_EQ(ours[0].shape(), whole[0].shape());
  const auto a = ours[0].f32(), b = whole[0].f32();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));

  const std::string steps = compiled.model->describe();
  EXPECT_NE(steps.find("partitioned: 4 segments\n"), std::string::npos) << steps;
  EXPECT_NE(steps.find("copy 'relu' picky -> cpu-reference\n"), std::string::npos) << steps;
  EXPECT_NE(steps.find("copy 'add1' cpu-reference -> picky\n"), std::string::npos) << steps;
  EXPECT_NE(steps.find("copy 'conv2' picky -> cpu-reference\n"), std::string::npos) << steps;
  EXPECT_EQ(steps.find("copy 'add1' cpu-reference -> cpu-reference"), std::string::npos) << steps;
  EXPECT_NE(steps.find("segment 1 on picky: 2 layers\n"), std::string::npos) << steps;
  EXPECT_FALSE(compiled.model->time_device_replays(1).has_value());
}

TEST(PartitionedModel, MergesTheSegmentsProfiles) {
  const Graph graph = residual_graph();
  const PickyBackend backend(refuse_op(OpKind::kAdd));
  CompileOptions options;
  options.profile = true;
  const auto model = compile_with_fallback(graph, backend, ReferenceBackend(), options).model;
  model->run({random_tensor({1, 4, 6, 6}, 8)});
  Names layers;
  for (const LayerTime& layer : model->last_profile()) layers.push_back(layer.name);
  EXPECT_EQ(layers, (Names{"conv1", "relu", "add1", "conv2", "add2"}));
}

TEST(PartitionedModel, StrictBackendNamesTheLayerItsOperatorAndTheReason) {
  const Graph graph = residual_graph();
  CompileOptions options;
  options.strict_backend = true;
  try {
    compile_with_fallback(graph, PickyBackend(refuse_op(OpKind::kAdd)), ReferenceBackend(), options);
    FAIL() << "a strict compile ran a layer on the fallback";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "layer 'add1' (add) does not run on the picky backend: not supported (without "
              "--strict-backend it runs on cpu-reference)");
  }
}

TEST(PartitionedModel, AFullySupportedGraphCompilesWholeWithoutAPartition) {
  const Graph graph = residual_graph();
  const PickyBackend backend(refuse_op(OpKind::kUpsample));
  CompileOptions options;
  options.strict_backend = true;
  const FallbackCompile compiled = compile_with_fallback(graph, backend, ReferenceBackend(), options);
  EXPECT_EQ(dynamic_cast<PartitionedModel*>(compiled.model.get()), nullptr);
  EXPECT_TRUE(compiled.fallback_layers.empty());
  EXPECT_EQ(backend.compiled_node_counts, (std::vector<std::size_t>{graph.live_node_count()}));
}

TEST(EngineOnBackendObjects, ReportsTheFallbackLayers) {
  auto plan = std::make_shared<Plan>();
  plan->graph = residual_graph();
  const PickyBackend backend(refuse_op(OpKind::kAdd));
  CompileOptions options;
  options.batch = 1;
  Engine engine(plan, backend, ReferenceBackend(), options);
  EXPECT_EQ(engine.backend(), "picky");
  EXPECT_EQ(engine.fallback_layers(), (Names{"add1", "add2"}));
  EXPECT_EQ(fallback_warning(engine),
            "kiln: warning: 2 layers run on cpu-reference, not picky: add1, add2 (use --strict-backend to "
            "refuse)");
  EXPECT_EQ(engine.run(random_tensor({1, 4, 6, 6}, 9)).front().shape(), (Shape{1, 4, 6, 6}));
  const Engine whole(plan, ReferenceBackend(), ReferenceBackend(), options);
  EXPECT_TRUE(whole.fallback_layers().empty());
  EXPECT_EQ(fallback_warning(whole), "");
}

}  // namespace
}  // namespace kiln
