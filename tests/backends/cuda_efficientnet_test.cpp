// EfficientNet on the CUDA backend: the golden tiny EfficientNet (tests/data/golden/efficientnet_tiny,
// efficientnet_b0's layout), as built and after the graph passes, in fp32 and fp16. That the backend runs
// every node (so `kiln build --strict-backend` takes it) is checked without a GPU; the runs against the
// reference backend and timm's logits skip where there is none.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/error.h"
#include "cuda_test_util.h"
#include "families/registry.h"
#include "graph/precision_assignment.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "onednn_test_util.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

using testing::count_of;

const std::filesystem::path kGolden =
    std::filesystem::path(KILN_TEST_DATA_DIR) / "golden" / "efficientnet_tiny";

// cuDNN in f32 with FMA math against the reference's double accumulation, through ~50 layers.
constexpr double kF32Tolerance = 1e-4;
// fp16: both sides store every activation in fp16 and land one step apart where an f32 result straddles
// a rounding boundary; that compounds over the depth to a few 1e-3 at most.
constexpr double kF16Tolerance = 5e-3;

struct Variant {
  bool optimized;  // after the graph passes (BN folded, SiLU and sigmoid fused into the convolutions)
  bool fp16;
};

std::string variant_name(const Variant& v) {
  return std::string(v.optimized ? "optimized" : "as_built") + (v.fp16 ? "_fp16" : "_fp32");
}

void PrintTo(const Variant& v, std::ostream* out) { *out << variant_name(v); }

const Variant kVariants[] = {{true, false}, {true, true}, {false, false}, {false, true}};

Graph efficientnet_tiny(const Variant& v) {
  const FamilyInfo& family = find_family("timm_efficientnet");
  const SafetensorsFile checkpoint = SafetensorsFile::open(kGolden / "model.safetensors");
  std::map<std::string, Tensor> weights;
  for (const auto& name : checkpoint.names()) weights.emplace(name, checkpoint.tensor(name).to(DType::kF32));
  Graph graph = family.build(weights, read_timm_config(kGolden / "config.json", family.default_config), -1);
  if (v.optimized) run_passes(graph);
  if (v.fp16) {
    assign_precision(graph, Precision::kF16);
    widen_constants_to_f32(graph);  // as the Engine hands an fp16 plan's graph to backends
  }
  return graph;
}

std::size_t nodes_of(const Graph& graph, OpKind op) {
  std::size_t count = 0;
  for (const NodeId id : graph.topological_order()) count += graph.node(id).op == op ? 1 : 0;
  return count;
}

std::size_t convs_with(const Graph& graph, Activation activation) {
  std::size_t count = 0;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    count += node.op == OpKind::kConv2d && node.attr<ConvAttrs>().activation == activation ? 1 : 0;
  }
  return count;
}

TEST(CudaEfficientNetTest, EveryNodeRunsOnTheCudaBackend) {
  if (!testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const auto backend = make_backend("cuda");
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(variant_name(v));
    const Graph graph = efficientnet_tiny(v);
    ASSERT_GT(nodes_of(graph, OpKind::kChannelScale), 4u);
    if (v.optimized) {
      // Every batch norm folded into its convolution and every SiLU and sigmoid fused into one: the
      // convolutions' epilogues apply them.
      EXPECT_EQ(nodes_of(graph, OpKind::kBatchNorm), 0u);
      EXPECT_EQ(nodes_of(graph, OpKind::kActivation), 0u);
      EXPECT_EQ(convs_with(graph, Activation::kSigmoid), nodes_of(graph, OpKind::kChannelScale));
      EXPECT_GT(convs_with(graph, Activation::kSilu), 2 * nodes_of(graph, OpKind::kChannelScale));
    }
    for (const NodeId id : graph.topological_order()) {
      const Node& node = graph.node(id);
      EXPECT_EQ(backend->unsupported_reason(graph, node), "") << node.name;
    }
  }
}

class CudaEfficientNetRunTest : public ::testing::TestWithParam<Variant> {};

TEST_P(CudaEfficientNetRunTest, MatchesTheReferenceAndTimm) {
  KILN_SKIP_WITHOUT_GPU();
  const Variant v = GetParam();
  const Graph graph = efficientnet_tiny(v);
  const Tensor x = read_npy(kGolden / "input.npy");
  const Tensor ref = testing::run_on("cpu-reference", graph, {x}).at(0);
  const Tensor timm = read_npy(kGolden / "logits.npy").to(DType::kF32);
  for (const std::int64_t opt_level : {0, 1}) {  // the libraries' heuristic choices, then timed tactics
    SCOPED_TRACE(cat("opt level ", opt_level));
    CompileOptions options;
    options.opt_level = opt_level;
    const Tensor ours = testing::run_on("cuda", graph, {x}, options).at(0);
    EXPECT_LE(testing::relative_difference(ours, ref), v.fp16 ? kF16Tolerance : kF32Tolerance);
    if (!v.fp16) {
      EXPECT_LE(testing::relative_difference(ours, timm), kF32Tolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaEfficientNetRunTest, ::testing::ValuesIn(kVariants),
                         [](const auto& param_info) { return variant_name(param_info.param); });

// After the passes every SiLU and sigmoid sits in a convolution, so no activation runs as a step of its
// own; every squeeze-excite runs as two steps (squeeze_excite_kernels.h): its pool with fc1 and SiLU, then
// fc2 with its sigmoid inside the channel scale; the other SiLU convolutions are convolution steps with their
// SiLU epilogue.
TEST(CudaEfficientNetTest, GatesRunOnTheirOwnKernelsAndActivationsInTheConvolutions) {
  KILN_SKIP_WITHOUT_GPU();
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    const Graph graph = efficientnet_tiny({true, fp16});
    const std::size_t gates = nodes_of(graph, OpKind::kChannelScale);
    ASSERT_EQ(nodes_of(graph, OpKind::kActivation), 0u);
    ASSERT_EQ(convs_with(graph, Activation::kSigmoid), gates);
    CompileOptions options;
    options.opt_level = 1;
    options.batch = 2;
    const auto model = make_backend("cuda")->compile(graph, options);
    const std::string steps = model->describe();
    EXPECT_EQ(count_of(steps, ": squeeze-excite global avg pool + fc1 + silu ("), gates) << steps;
    EXPECT_EQ(count_of(steps, ": squeeze-excite fc2 + sigmoid + channel scale ("), gates) << steps;
    EXPECT_EQ(count_of(steps, ": channel scale\n"), 0u) << steps;
    EXPECT_EQ(count_of(steps, "squeeze_mlp"), 0u) << steps;
    EXPECT_EQ(count_of(steps, ": activation\n"), 0u) << steps;
    EXPECT_EQ(count_of(steps, " act silu"), convs_with(graph, Activation::kSilu) - gates) << steps;
  }
}

}  // namespace
}  // namespace kiln
