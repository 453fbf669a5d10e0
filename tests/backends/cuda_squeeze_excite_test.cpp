// Squeeze-excite on the CUDA backend (squeeze_excite_kernels.h): which steps compute it (fusion.h, decided on
// the host: checked without a GPU), and on a GPU its numbers against the reference backend at sizes the
// cross-backend operator test does not reach (pools split over many blocks, several channel blocks and
// tiles, several images), and that repeated runs give the same bits (its sums run in a fixed order).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
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
using testing::random_tensor;
using testing::SmallGraph;

// x -> ReLU -> global pool -> fc1 (SiLU) -> fc2 (sigmoid) -> channel scale of the ReLU's output.
struct SqueezeExcite {
  SmallGraph g;
  NodeId relu = kNoNode, pool = kNoNode, fc1 = kNoNode, fc2 = kNoNode, scale = kNoNode;
  ValueId pooled = -1;
};

SqueezeExcite make_squeeze_excite(std::int64_t channels, std::int64_t hidden, std::int64_t size, bool fp16) {
  SqueezeExcite t;
  SmallGraph& g = t.g;
  const ValueId x =
      g.node(OpKind::kActivation, {g.input("x", {channels, size, size})}, ActivationAttrs{Activation::kRelu});
  t.relu = g.graph.value(x).producer;
  t.pooled = g.node(OpKind::kGlobalAvgPool, {x});
  t.pool = g.graph.value(t.pooled).producer;
  const ValueId h = g.conv(t.pooled, hidden, conv_attrs(1, 1, 0, 1, Activation::kSilu));
  t.fc1 = g.graph.value(h).producer;
  const ValueId gate = g.conv(h, channels, conv_attrs(1, 1, 0, 1, Activation::kSigmoid));
  t.fc2 = g.graph.value(gate).producer;
  const ValueId y = g.node(OpKind::kChannelScale, {x, gate});
  t.scale = g.graph.value(y).producer;
  g.output(y);
  if (fp16) {
    assign_precision(g.graph, Precision::kF16);
    widen_constants_to_f32(g.graph);  // as the Engine hands an fp16 plan's graph over
  }
  return t;
}

[[maybe_unused]] std::size_t at(NodeId id) { return static_cast<std::size_t>(id); }

#if KILN_HAVE_CUDA
TEST(CudaSqueezeExciteFusionTest, Fc1ComputesThePoolAndTheScaleComputesFc2AtEveryBatch) {
  for (const std::int64_t batch : {1, 32}) {
    SCOPED_TRACE(cat("batch ", batch));
    const SqueezeExcite t = make_squeeze_excite(1152, 48, 7, true);  // EfficientNet-B0's widest
    const std::vector<NodeId> order = t.g.graph.topological_order();
    const cuda::Fusions f = cuda::find_fusions(t.g.graph, order, true, batch);
    EXPECT_EQ(f.pool_into_squeeze[at(t.fc1)], t.pool);
    EXPECT_EQ(f.excite_into_scale[at(t.scale)], t.fc2);
    EXPECT_EQ(f.squeeze_into_expand[at(t.fc2)], kNoNode);
    const cuda::Schedule s = cuda::schedule_steps(t.g.graph, order, f);
    EXPECT_EQ(s.executed, (std::vector<NodeId>{t.relu, t.fc1, t.scale}));
    EXPECT_EQ(s.position[at(t.pool)], s.position[at(t.fc1)]);
    EXPECT_EQ(s.position[at(t.fc2)], s.position[at(t.scale)]);
    // fc1's output is a buffer read at the scale's step; the pooled vector and the gate have none.
    const std::vector<Shape> shapes = infer_shapes(t.g.graph, {{batch, 1152, 7, 7}});
    const cuda::ArenaAssignment a = cuda::assign_arena(t.g.graph, order, s, shapes, 2);
    const int hidden = a.buffer_of[static_cast<std::size_t>(t.g.graph.node(t.fc1).output)];
    ASSERT_GE(hidden, 0);
    EXPECT_EQ(a.buffers[static_cast<std::size_t>(hidden)].last, s.position[at(t.scale)]);
    EXPECT_EQ(a.buffer_of[static_cast<std::size_t>(t.pooled)], -1);
    EXPECT_EQ(a.buffer_of[static_cast<std::size_t>(t.g.graph.node(t.fc2).output)], -1);
  }
}

// Where the pooled vector or the gate has another reader, or the gate is too wide for the two launches,
// the gate runs as before (squeeze_mlp_kernels.h or cuDNN) and the scale on its own.
TEST(CudaSqueezeExciteFusionTest, OtherReadersAndWideGatesKeepTheGateStep) {
  SqueezeExcite pooled_read = make_squeeze_excite(64, 8, 14, false);
  pooled_read.g.output(pooled_read.pooled);
  SqueezeExcite gate_read = make_squeeze_excite(64, 8, 14, false);
  gate_read.g.output(gate_read.g.graph.node(gate_read.fc2).output);
  const SqueezeExcite wide = make_squeeze_excite(4100, 8, 2, false);
  for (const SqueezeExcite* t :
       std::initializer_list<const SqueezeExcite*>{&pooled_read, &gate_read, &wide}) {
    const cuda::Fusions f = cuda::find_fusions(t->g.graph, t->g.graph.topological_order(), true, 1);
    EXPECT_EQ(f.pool_into_squeeze[at(t->fc1)], kNoNode);
    EXPECT_EQ(f.excite_into_scale[at(t->scale)], kNoNode);
    EXPECT_FALSE(f.absorbed[at(t->fc2)]);
  }
}
#endif

struct Size {
  std::int64_t channels, hidden, size, batch;
};

// fp32: the pool's and the dot products' f32 sums in another order than the reference's double ones
// (about 1e-7 relative per value). fp16: both sides round the pooled vector, the hidden units, the gate
// and the output to fp16; a value whose f32 sum straddles a rounding boundary lands one step (2^-11
// relative) apart, so about one element in a few hundred differs by that: well under 2e-3 relative L2.
TEST(CudaSqueezeExciteTest, MatchesTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  // Pools split over many blocks (56 x 56), five channel blocks and 18 tiles (1152), one channel per
  // thread (20 in fp16), a part tile (72).
  const Size sizes[] = {{144, 6, 56, 3}, {1152, 48, 14, 2}, {20, 5, 9, 1}, {72, 6, 28, 4}, {32, 8, 112, 1}};
  for (const bool fp16 : {false, true}) {
    for (const Size& z : sizes) {
      SCOPED_TRACE(cat(fp16 ? "fp16 " : "fp32 ", z.channels, " -> ", z.hidden, " at ", z.size, "x", z.size,
                       ", batch ", z.batch));
      const SqueezeExcite t = make_squeeze_excite(z.channels, z.hidden, z.size, fp16);
      CompileOptions options;
      options.batch = z.batch;
      const auto model = make_backend("cuda")->compile(t.g.graph, options);
      const std::string steps = model->describe();
      EXPECT_NE(
          steps.find(cat("squeeze-excite global avg pool + fc1 + silu (", z.channels, " -> ", z.hidden)),
          std::string::npos)
          << steps;
      EXPECT_NE(steps.find("squeeze-excite fc2 + sigmoid + channel scale"), std::string::npos) << steps;
      const Tensor x = random_tensor({z.batch, z.channels, z.size, z.size}, 31);
      const Tensor ours = model->run({x}).front();
      const Tensor ref = testing::run_on("cpu-reference", t.g.graph, {x}).at(0);
      EXPECT_LE(testing::relative_difference(ours, ref), fp16 ? 2e-3 : 1e-5);
    }
  }
}

TEST(CudaSqueezeExciteTest, RepeatedRunsAreBitIdentical) {
  KILN_SKIP_WITHOUT_GPU();
  const SqueezeExcite t = make_squeeze_excite(144, 6, 56, true);
  CompileOptions options;
  options.batch = 3;
  const auto model = make_backend("cuda")->compile(t.g.graph, options);
  const Tensor x = random_tensor({3, 144, 56, 56}, 41), other = random_tensor({3, 144, 56, 56}, 42);
  const Tensor first = model->run({x}).front();
  model->run({other});
  const Tensor again = model->run({x}).front();
  ASSERT_EQ(first.nbytes(), again.nbytes());
  EXPECT_EQ(std::memcmp(first.bytes(), again.bytes(), first.nbytes()), 0);
}

// Early launch (kernel_launch.cuh) lets the squeeze and excite kernels be scheduled before the kernel ahead
// of them has finished; each waits for it before touching memory, so the bits are those of launches in
// stream order. A compile given another value than on or off is refused, naming the option.
TEST(CudaSqueezeExciteTest, EarlyLaunchGivesTheBitsOfOrderedLaunches) {
  KILN_SKIP_WITHOUT_GPU();
  const SqueezeExcite t = make_squeeze_excite(144, 6, 56, true);
  CompileOptions options;
  options.batch = 3;
  const Tensor x = random_tensor({3, 144, 56, 56}, 43);
  Tensor outputs[2];
  for (const int on : {0, 1}) {
    options.backend_options = {{"early-launch", on ? "on" : "off"}};
    outputs[on] = make_backend("cuda")->compile(t.g.graph, options)->run({x}).front();
  }
  options.backend_options = {{"early-launch", "yes"}};
  try {
    make_backend("cuda")->compile(t.g.graph, options);
    ADD_FAILURE() << "early-launch=yes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda option early-launch: expected on or off, got 'yes'"),
              std::string::npos)
        << e.what();
  }
  ASSERT_EQ(outputs[0].nbytes(), outputs[1].nbytes());
  EXPECT_EQ(std::memcmp(outputs[0].bytes(), outputs[1].bytes(), outputs[0].nbytes()), 0);
}

}  // namespace
}  // namespace kiln
