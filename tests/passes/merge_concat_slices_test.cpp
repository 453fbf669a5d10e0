#include <gtest/gtest.h>

#include "graph/verifier.h"
#include "pass_test_util.h"
#include "passes/pass.h"

namespace kiln {
namespace {

using testing::add_conv;
using testing::count_live;
using testing::expect_same_function;
using testing::node_named;

ValueId add_slice(Graph& graph, const std::string& name, ValueId x, std::int64_t begin, std::int64_t end,
                  std::int64_t groups = 1) {
  return graph.add_node(OpKind::kChannelSlice, name, {x},
                        SliceAttrs{.groups = groups, .begin = begin, .end = end});
}

// A C2f block's head: conv -> two halves, the second through a conv, all three concatenated -> conv.
Graph c2f_head() {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 6, 6});
  const ValueId cv1 = add_conv(graph, "cv1", x, {.in = 4, .out = 8, .kernel = 1}, 1);
  const ValueId half0 = add_slice(graph, "split0", cv1, 0, 4);
  const ValueId half1 = add_slice(graph, "split1", cv1, 4, 8);
  const ValueId m = add_conv(graph, "m", half1, {.in = 4, .out = 4}, 2);
  const ValueId joined = graph.add_node(OpKind::kConcat, "cat", {half0, half1, m}, ConcatAttrs{1});
  graph.mark_output(add_conv(graph, "cv2", joined, {.in = 12, .out = 4, .kernel = 1}, 3));
  return graph;
}

TEST(MergeConcatSlices, ReadsBothHalvesAsTheWholeTensor) {
  Graph graph = c2f_head();
  const Graph before = graph;
  EXPECT_EQ(merge_concat_slices(graph), PassChanges{"cat reads 2 neighbouring slices of cv1 as one"});
  const Node& cat = node_named(graph, "cat");
  ASSERT_EQ(cat.inputs.size(), 2u);
  EXPECT_EQ(cat.inputs[0], node_named(graph, "cv1").output);
  EXPECT_EQ(cat.inputs[1], node_named(graph, "m").output);
  EXPECT_FALSE(eliminate_dead_nodes(graph).empty());  // split0 has no reader left; split1 feeds m
  EXPECT_EQ(count_live(graph, OpKind::kChannelSlice), 1u);
  graph.compact();
  verify(graph);
  expect_same_function(before, graph, 7, 0.0);      // the same elements copied: exact
  EXPECT_TRUE(merge_concat_slices(graph).empty());  // idempotent
}

TEST(MergeConcatSlices, MakesOneSliceOfAPartialStretchAndBypassesAConcatOfOneRun) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 6, 5, 5});
  const ValueId a = add_slice(graph, "a", x, 1, 3);
  const ValueId b = add_slice(graph, "b", x, 3, 4);
  const ValueId joined = graph.add_node(OpKind::kConcat, "cat", {a, b}, ConcatAttrs{1});
  graph.mark_output(add_conv(graph, "conv", joined, {.in = 3, .out = 2, .kernel = 1}, 1));
  const Graph before = graph;
  EXPECT_EQ(merge_concat_slices(graph), PassChanges{"cat reads 2 neighbouring slices of a.merged as one"});
  EXPECT_FALSE(graph.find_node("cat").has_value());
  const Node& merged = node_named(graph, "a.merged");
  EXPECT_EQ(merged.attr<SliceAttrs>(), (SliceAttrs{.groups = 1, .begin = 1, .end = 4}));
  EXPECT_EQ(node_named(graph, "conv").inputs[0], merged.output);
  eliminate_dead_nodes(graph);
  graph.compact();
  verify(graph);
  expect_same_function(before, graph, 8, 0.0);
}

TEST(MergeConcatSlices, LeavesGapsOtherTensorsGroupsAndOtherAxes) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 8, 4, 4});
  const ValueId y = graph.add_input("y", {-1, 8, 4, 4});
  const ValueId gap =
      graph.add_node(OpKind::kConcat, "gap",
                     {add_slice(graph, "g0", x, 0, 2), add_slice(graph, "g1", x, 3, 5)}, ConcatAttrs{1});
  const ValueId two =
      graph.add_node(OpKind::kConcat, "two",
                     {add_slice(graph, "t0", x, 0, 2), add_slice(graph, "t1", y, 2, 4)}, ConcatAttrs{1});
  const ValueId grouped = graph.add_node(
      OpKind::kConcat, "grouped", {add_slice(graph, "q0", x, 0, 2, 2), add_slice(graph, "q1", x, 2, 4, 2)},
      ConcatAttrs{1});
  const ValueId spatial =
      graph.add_node(OpKind::kConcat, "spatial",
                     {add_slice(graph, "s0", x, 0, 4), add_slice(graph, "s1", x, 4, 8)}, ConcatAttrs{2});
  for (const ValueId v : {gap, two, grouped, spatial}) graph.mark_output(v);
  EXPECT_TRUE(merge_concat_slices(graph).empty());
}

TEST(MergeConcatSlices, KeepsAConcatThatIsAGraphOutput) {
  Graph graph;
  const ValueId x = graph.add_input("x", {-1, 4, 3, 3});
  graph.mark_output(graph.add_node(OpKind::kConcat, "cat",
                                   {add_slice(graph, "a", x, 0, 2), add_slice(graph, "b", x, 2, 4)},
                                   ConcatAttrs{1}));
  EXPECT_TRUE(merge_concat_slices(graph).empty());
}

}  // namespace
}  // namespace kiln
