// The CUDA backend's attention / squeeze-excite gate (squeeze_mlp_kernels.h): which global pools its launch
// computes (fusion.h, decided on the host: checked without a GPU), the steps a compiled gate runs, and
// that repeated runs give bit-identical outputs (no atomics in the gate). Its numbers against the
// reference are in the cross-backend operator test (op_test/split_attention_cases.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda_test_util.h"
#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/program/arena.h"
#include "backends/cuda/program/fusion.h"
#include "graph/shape_inference.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::radix_attrs;
using testing::random_tensor;
using testing::SmallGraph;

// A gate's nodes: ReLU, (radix sum,) global pool, fc1 (ReLU), fc2; fc2's output is the graph's.
struct Gate {
  SmallGraph g;
  NodeId relu = kNoNode, sum = kNoNode, pool = kNoNode, fc1 = kNoNode, fc2 = kNoNode;
  ValueId pooled = -1;
};

Gate make_gate(std::int64_t channels, std::int64_t radix, std::int64_t cardinality, std::int64_t hidden,
               std::int64_t size) {
  Gate t;
  SmallGraph& g = t.g;
  const ValueId x = g.input("x", {channels * radix, size, size});
  ValueId v = g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
  t.relu = g.graph.value(v).producer;
  if (radix > 1) {
    v = g.node(OpKind::kRadixSum, {v}, radix_attrs(radix, cardinality));
    t.sum = g.graph.value(v).producer;
  }
  t.pooled = g.node(OpKind::kGlobalAvgPool, {v});
  t.pool = g.graph.value(t.pooled).producer;
  const ValueId h = g.conv(t.pooled, hidden, conv_attrs(1, 1, 0, cardinality, Activation::kRelu));
  t.fc1 = g.graph.value(h).producer;
  const ValueId y = g.conv(h, channels * radix, conv_attrs(1, 1, 0, cardinality));
  t.fc2 = g.graph.value(y).producer;
  g.output(y);
  return t;
}

[[maybe_unused]] std::size_t at(NodeId id) { return static_cast<std::size_t>(id); }

// Every node in fp16, its constants widened back to f32, as the Engine hands an fp16 plan's graph over.
void to_fp16(Graph& graph) {
  assign_precision(graph, Precision::kF16);
  widen_constants_to_f32(graph);
}

#if KILN_HAVE_CUDA
cuda::Fusions fusions_of(const Graph& graph, std::int64_t batch = 1) {
  return cuda::find_fusions(graph, graph.topological_order(), true, batch);
}

TEST(CudaGateFusionTest, ResnestGateComputesItsPoolAndRadixSum) {
  const Gate t = make_gate(512, 2, 1, 256, 7);  // ResNeSt-50d layer4
  const cuda::Fusions f = fusions_of(t.g.graph);
  EXPECT_EQ(f.squeeze_into_expand[at(t.fc2)], t.fc1);
  EXPECT_EQ(f.pool_into_gate[at(t.fc2)], t.pool);
  EXPECT_EQ(f.radix_sum_into_pool[at(t.pool)], t.sum);
  for (const NodeId inner : {t.sum, t.pool, t.fc1}) EXPECT_TRUE(f.absorbed[at(inner)]);
  const std::vector<NodeId> order = t.g.graph.topological_order();
  const cuda::Schedule s = cuda::schedule_steps(t.g.graph, order, f);
  EXPECT_EQ(s.executed, (std::vector<NodeId>{t.relu, t.fc2}));
  for (const NodeId inner : {t.sum, t.pool, t.fc1}) EXPECT_EQ(s.position[at(inner)], s.position[at(t.fc2)]);
  // The ReLU's output, which only the fused radix sum reads, lives until the gate's step.
  const std::vector<Shape> shapes = infer_shapes(t.g.graph, {{1, 1024, 7, 7}});
  const cuda::ArenaAssignment a = cuda::assign_arena(t.g.graph, order, s, shapes, 2);
  const ValueId relu_out = t.g.graph.node(t.relu).output;
  EXPECT_EQ(a.buffers[static_cast<std::size_t>(a.buffer_of[static_cast<std::size_t>(relu_out)])].last,
            s.position[at(t.fc2)]);
}

TEST(CudaGateFusionTest, GroupedGatesAndSqueezeExciteFuse) {
  const Gate grouped = make_gate(80, 4, 2, 80, 14);  // ResNeSt-50d_4s2x40d layer1
  const cuda::Fusions f = fusions_of(grouped.g.graph);
  EXPECT_EQ(f.squeeze_into_expand[at(grouped.fc2)], grouped.fc1);
  EXPECT_EQ(f.pool_into_gate[at(grouped.fc2)], grouped.pool);
  const Gate se = make_gate(480, 1, 1, 20, 14);  // an EfficientNet-B0 stage-4 squeeze-excite
  const cuda::Fusions g = fusions_of(se.g.graph);
  EXPECT_EQ(g.pool_into_gate[at(se.fc2)], se.pool);
  EXPECT_EQ(g.radix_sum_into_pool[at(se.pool)], kNoNode);
}

// Beyond 512 pooled channels the cluster's partial sums cost more than the pool's launch (squeeze_mlp.cu):
// EfficientNet-B0's last squeeze-excite keeps its pool, and still runs fc1 and fc2 as one launch.
TEST(CudaGateFusionTest, WideSqueezeExciteKeepsItsPool) {
  const Gate se = make_gate(1152, 1, 1, 48, 7);
  const cuda::Fusions f = fusions_of(se.g.graph);
  EXPECT_EQ(f.squeeze_into_expand[at(se.fc2)], se.fc1);
  EXPECT_EQ(f.pool_into_gate[at(se.fc2)], kNoNode);
}

// Above one image the gate runs the batched kernel: dense gates of up to 32k weights, the pool a launch
// of its own; ResNeSt-50d's layer4 gate (393k weights) and grouped gates stay on cuDNN.
TEST(CudaGateFusionTest, BatchesKeepThePoolAndTakeOnlySmallDenseGates) {
  const Gate small = make_gate(64, 2, 1, 32, 56);  // ResNeSt-50d layer1
  const cuda::Fusions f = fusions_of(small.g.graph, 3);
  EXPECT_EQ(f.squeeze_into_expand[at(small.fc2)], small.fc1);
  EXPECT_EQ(f.pool_into_gate[at(small.fc2)], kNoNode);
  EXPECT_EQ(f.radix_sum_into_pool[at(small.pool)], small.sum);
  const Gate big = make_gate(512, 2, 1, 256, 7);
  EXPECT_EQ(fusions_of(big.g.graph, 3).squeeze_into_expand[at(big.fc2)], kNoNode);
  const Gate grouped = make_gate(80, 4, 2, 80, 14);
  EXPECT_EQ(fusions_of(grouped.g.graph, 32).squeeze_into_expand[at(grouped.fc2)], kNoNode);
}

TEST(CudaGateFusionTest, APoolWithAnotherReaderRunsOnItsOwn) {
  Gate t = make_gate(256, 2, 1, 128, 14);
  t.g.output(t.pooled);
  const cuda::Fusions f = fusions_of(t.g.graph);
  EXPECT_EQ(f.squeeze_into_expand[at(t.fc2)], t.fc1);  // the gate is still one launch
  EXPECT_EQ(f.pool_into_gate[at(t.fc2)], kNoNode);
  EXPECT_FALSE(f.absorbed[at(t.pool)]);
}

// The pool stays in the gate while an image's pool reads at most about 1.1 MB (squeeze_mlp.cu):
// 112 x 112 x 32 is 0.8 MB in fp16 but 1.6 MB in f32; EfficientNet-B7's first pool (300 x 300 x 64)
// is 11.5 MB even in fp16.
TEST(CudaGateFusionTest, BigPoolsKeepTheirOwnLaunch) {
  for (const bool fp16 : {false, true}) {
    Gate t = make_gate(32, 1, 1, 8, 112);
    if (fp16) to_fp16(t.g.graph);
    EXPECT_EQ(fusions_of(t.g.graph).pool_into_gate[at(t.fc2)], fp16 ? t.pool : kNoNode) << fp16;
  }
  Gate b7 = make_gate(64, 1, 1, 16, 300);
  to_fp16(b7.g.graph);
  const cuda::Fusions f = fusions_of(b7.g.graph);
  EXPECT_EQ(f.squeeze_into_expand[at(b7.fc2)], b7.fc1);
  EXPECT_EQ(f.pool_into_gate[at(b7.fc2)], kNoNode);
}
#endif

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0;
}

// The single-image gate's sums run in a fixed order: the same input gives the same bits, run after run,
// also with another input run in between.
TEST(CudaGateTest, RepeatedRunsAreBitIdentical) {
  KILN_SKIP_WITHOUT_GPU();
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    Gate t = make_gate(512, 2, 1, 256, 7);
    if (fp16) to_fp16(t.g.graph);
    CompileOptions options;
    options.opt_level = 1;
    const auto model = make_backend("cuda")->compile(t.g.graph, options);
    EXPECT_NE(
        model->describe().find("radix sum + global avg pool + fc1 + act + fc2 (squeeze_mlp, 512 -> 256 -> "
                               "1024)"),
        std::string::npos)
        << model->describe();
    const Tensor x = random_tensor({1, 1024, 7, 7}, 21), other = random_tensor({1, 1024, 7, 7}, 22);
    const Tensor first = model->run({x}).front();
    const Tensor second = model->run({x}).front();
    model->run({other});
    const Tensor third = model->run({x}).front();
    EXPECT_TRUE(bit_identical(first, second));
    EXPECT_TRUE(bit_identical(first, third));
  }
}

// At batch 3 a small gate runs the batched kernel after its own pool step.
TEST(CudaGateTest, BatchesRunThePoolThenTheBatchedGate) {
  KILN_SKIP_WITHOUT_GPU();
  Gate t = make_gate(64, 2, 1, 32, 14);
  CompileOptions options;
  options.opt_level = 1;
  options.batch = 3;
  const auto model = make_backend("cuda")->compile(t.g.graph, options);
  const std::string steps = model->describe();
  EXPECT_NE(steps.find("attention gate fc1 + act + fc2 (squeeze_mlp, 64 -> 32 -> 128)"), std::string::npos)
      << steps;
  EXPECT_EQ(steps.find("global avg pool + fc1"), std::string::npos) << steps;
}

}  // namespace
}  // namespace kiln
