// int8 plans on the CUDA backend: int8 convolutions run on kiln's Hopper kernel alone (int8 operands,
// per-channel scales, fp16 out), their inputs quantized by int8 quantize steps, among fp16 layers. What the
// backend takes is checked on any machine; the network against the reference's int8 simulation needs a
// Hopper GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_test_util.h"
#include "fp8_graph_util.h"
#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "reference_test_util.h"
#include "testing/resnest_like_graph.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"
#endif

namespace kiln {
namespace {

using testing::cuda_built;
using testing::random_tensor;
using testing::relative_difference;
using testing::run_on;

// The convolutions kiln's int8 kernel takes: 16n channels in (a group's) and out (a 3-channel stem and the
// attention gates' narrow hidden layers are not), 64n output channels a group where grouped, and not the
// first one.
std::vector<std::string> int8_layers(const Graph& graph) {
  std::vector<std::string> layers;
  for (const std::string& name : quantizable_layers(graph)) {
    const Node& conv = graph.node(*graph.find_node(name));
    const Shape& w = graph.value(conv.inputs[1]).shape;
    const std::int64_t groups = conv.attr<ConvAttrs>().groups;
    if (w[0] % 16 == 0 && w[1] % 16 == 0 && (groups == 1 || w[0] % (64 * groups) == 0))
      layers.push_back(name);
  }
  return layers;
}

std::size_t grouped_layers(const Graph& graph, const std::vector<std::string>& layers) {
  std::size_t grouped = 0;
  for (const std::string& name : layers)
    grouped += graph.node(*graph.find_node(name)).attr<ConvAttrs>().groups > 1;
  return grouped;
}

// `layers` rewritten to int8 with every activation scale `scale`, the rest fp16; with `residuals` the
// residual stream held in int8 codes too (quantize_residuals()). Returns the values so held.
std::vector<std::string> to_int8_network(Graph& graph, const std::vector<std::string>& layers, float scale,
                                         bool residuals = false) {
  return testing::to_fp8_network(graph, layers, scale, residuals, QuantFormat::kInt8);
}

// int8 layers run on kiln's Hopper kernel: tests of int8 networks need a GPU of compute capability 9.0.
#if KILN_HAVE_CUDA
#define KILN_SKIP_WITHOUT_HOPPER() \
  KILN_SKIP_WITHOUT_GPU();         \
  if (!cuda::hopper::hopper_gpu()) GTEST_SKIP() << "int8 layers run on kiln's Hopper kernel, sm_90 only"
#else
#define KILN_SKIP_WITHOUT_HOPPER() KILN_SKIP_WITHOUT_GPU()
#endif

testing::ResnestLikeOptions int8_resnet() {
  testing::ResnestLikeOptions o;
  o.image = 64;
  o.stem_width = 16;
  o.base_width = 16;
  o.depths = {2, 1, 1, 1};
  o.classes = 10;
  o.radix = 1;  // no grouped convolutions
  return o;
}

TEST(CudaInt8Test, TakesConvolutionsOfSixteenChannelMultiplesAndTheirQuantizePoints) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const auto backend = make_backend("cuda");
  Graph graph = testing::resnest_like_graph(int8_resnet());
  const std::vector<std::string> layers = int8_layers(graph);
  ASSERT_GE(layers.size(), 10u);
  to_int8_network(graph, layers, 0.02f);
  std::size_t int8_convs = 0, int8_quantize = 0;
  for (const Node& node : graph.nodes()) {
    const bool int8_quantize_point = node.op == OpKind::kQuantize && node.attr<QuantizeAttrs>().int8;
    if (node.precision != Precision::kI8 && !int8_quantize_point && node.op != OpKind::kDequantize) continue;
    EXPECT_EQ(backend->unsupported_reason(graph, node), "") << node.name;
    int8_convs += node.op == OpKind::kConv2d;
    int8_quantize += int8_quantize_point;
  }
  EXPECT_EQ(int8_convs, layers.size());
  EXPECT_GE(int8_quantize, 1u);
  // A grouped int8 convolution of 16 output channels a group is refused in one line naming why.
  testing::SmallGraph m;
  const ValueId x = m.input("x", {32, 8, 8});
  const ValueId y = m.conv(x, 32, testing::conv_attrs(3, 1, 1, 2));
  m.output(y);
  Graph grouped = m.graph;
  rewrite_to_fp8(grouped, {grouped.node(grouped.value(y).producer).name}, {{{"x", 0.02f}}}, true,
                 QuantFormat::kInt8);
  for (const Node& node : grouped.nodes()) {
    if (node.op != OpKind::kConv2d) continue;
    const std::string reason = backend->unsupported_reason(grouped, node);
    EXPECT_NE(reason.find("64 output channels a group, this one has 32 in 2 groups"), std::string::npos)
        << reason;
  }
}

// Off a Hopper GPU the backend refuses int8 plans in one line naming the kernel they need.
TEST(CudaInt8Test, Int8PlansNeedAHopperGpu) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const std::string refusal = make_backend("cuda")->precision_refusal(Precision::kI8);
#if KILN_HAVE_CUDA
  if (cuda::hopper::hopper_gpu()) {
    EXPECT_EQ(refusal, "");
    return;
  }
#endif
  EXPECT_NE(refusal.find("Hopper"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find('\n'), std::string::npos) << refusal;
}

// The network against the reference's exact int8 simulation. The GPU rounds to fp16 where the reference
// keeps f32: the input, and each int8 layer's output (the reference's int8 layers write f32, the GPU's
// fp16, its storage type). Each rounding is fp16's roundoff, which at the input moves the reference's
// output by d (measured); counting each later rounding as moving it no more than that one, the
// difference stays within (int8 layers + 1) x d by the triangle inequality. A layout or scale mistake
// is O(1). `steps`: the compiled plan's steps.
void expect_int8_network_matches_reference(const Graph& graph, std::size_t int8_layers, std::string& steps) {
  const Tensor x = random_tensor({2, 3, 64, 64}, 21);
  const Tensor reference = run_on("cpu-reference", graph, {x}).front();
  const double moved =
      relative_difference(run_on("cpu-reference", graph, {testing::jittered(x, 121)}).front(), reference);
  ASSERT_GT(moved, 0.0);
  ASSERT_LT(moved, 0.1);  // the network must not be so chaotic that the check means nothing
  CompileOptions options;
  options.batch = 2;
  const auto model = make_backend("cuda")->compile(graph, options);
  steps = model->describe();
  EXPECT_LE(relative_difference(model->run({x}).front(), reference),
            static_cast<double>(int8_layers + 1) * moved)
      << steps;
}

TEST(CudaInt8Test, Int8NetworkMatchesTheReference) {
  Graph graph = testing::resnest_like_graph(int8_resnet());
  const std::vector<std::string> layers = int8_layers(graph);
  to_int8_network(graph, layers, 0.02f);
  KILN_SKIP_WITHOUT_HOPPER();
  std::string steps;
  ASSERT_NO_FATAL_FAILURE(expect_int8_network_matches_reference(graph, layers.size(), steps));
  EXPECT_EQ(testing::count_of(steps, "int8 conv kiln-hopper"), layers.size()) << steps;
  // Most int8 codes come from the convolutions before them (quantize_fusion.h): each block's first
  // convolution writes the second's, each block's last (at its residual add) the next block's.
  EXPECT_GE(testing::count_of(steps, "+ quantize to int8"), layers.size() / 2) << steps;
}

// ResNeSt's radix convolutions (two groups, 64 or more output channels each) in int8 on kiln's Hopper
// kernel beside the dense layers, against the reference within the bound above.
TEST(CudaInt8Test, GroupedInt8NetworkMatchesTheReference) {
  testing::ResnestLikeOptions o = int8_resnet();
  o.radix = 2;
  o.base_width = 64;
  o.depths = {1, 1, 1, 1};
  Graph graph = testing::resnest_like_graph(o);
  const std::vector<std::string> layers = int8_layers(graph);
  ASSERT_EQ(grouped_layers(graph, layers), 4u);  // one a stage
  to_int8_network(graph, layers, 0.02f);
  KILN_SKIP_WITHOUT_HOPPER();
  std::string steps;
  ASSERT_NO_FATAL_FAILURE(expect_int8_network_matches_reference(graph, layers.size(), steps));
  EXPECT_EQ(testing::count_of(steps, "int8 conv kiln-hopper"), layers.size()) << steps;
}

// The residual stream in int8 codes (quantize_residuals()): each identity block's input is stored as
// codes only, and its last convolution reads them as its residual in kiln's Hopper epilogue. The same
// bound as above: the reference's adds read the same quantized values.
TEST(CudaInt8Test, Int8ResidualStreamInCodesMatchesTheReference) {
  testing::ResnestLikeOptions o = int8_resnet();
  o.depths = {2, 2, 1, 1};
  Graph graph = testing::resnest_like_graph(o);
  const std::vector<std::string> layers = int8_layers(graph);
  const std::vector<std::string> held = to_int8_network(graph, layers, 0.02f, true);
  ASSERT_EQ(held.size(), 2u);  // the inputs of the two identity blocks
  KILN_SKIP_WITHOUT_HOPPER();
  std::string steps;
  ASSERT_NO_FATAL_FAILURE(expect_int8_network_matches_reference(graph, layers.size(), steps));
  EXPECT_GE(testing::count_lines_with(steps, "int8 conv kiln-hopper", "+residual"), held.size()) << steps;
}

}  // namespace
}  // namespace kiln
