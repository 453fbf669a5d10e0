// The CUDA backend against the reference backend: whole ResNeSt-like networks in fp32, fp16 and FP8,
// repeated runs of one captured CUDA graph, its own kernels for gates and classifiers, tactics stored in
// plans, and the no-device error (single operators are in the cross-backend operator test, op_test/).
// Tests that need a GPU skip (reported as skipped, not passed) where none is present, as on CI; the
// no-device error is checked there instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"
#include "core/error.h"
#include "cuda_test_util.h"
#include "fp8_graph_util.h"
#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "testing/resnest_like_graph.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::count_of;
using testing::cuda_built;
using testing::gpu_present;
using testing::jittered;
using GraphMaker = testing::SmallGraph;
using testing::random_tensor;
using testing::relative_difference;
using testing::run_on;

// cuDNN in f32 with TF32 off (FMA math) accumulates in f32 in its own order: about sqrt(K) * 2^-24
// relative per layer, compounding through depth; 1e-4 is the project's f32 bar and any indexing or
// layout mistake is O(1).
constexpr double kF32Tolerance = 1e-4;
// fp16: both sides store every activation in fp16 (unit roundoff 2^-11 = 4.9e-4); they round values
// that differ by accumulation order, so a value can land one fp16 step apart and the difference
// compounds over a network's depth: a few 1e-3 at most on these small networks.
constexpr double kF16Tolerance = 5e-3;

void expect_cuda_matches_reference(const Graph& graph, const std::vector<Tensor>& inputs, double tolerance,
                                   std::int64_t opt_level = 1) {
  CompileOptions options;
  options.opt_level = opt_level;
  const auto ours = run_on("cuda", graph, inputs, options);
  const auto ref = run_on("cpu-reference", graph, inputs);
  ASSERT_EQ(ours.size(), ref.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_LE(relative_difference(ours[i], ref[i]), tolerance) << "output " << i;
  }
}

Graph as_fp16(Graph graph) {
  assign_precision(graph, Precision::kF16);
  widen_constants_to_f32(graph);  // as the Engine hands graphs to backends
  return graph;
}

TEST(CudaBackendTest, WithoutADeviceCompileFailsWithOneLine) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  if (gpu_present()) GTEST_SKIP() << "a CUDA device is present";
  GraphMaker m;
  const ValueId x = m.input("x", {4, 8, 8});
  m.output(m.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu}));
  try {
    make_backend("cuda")->compile(m.graph, {});
    FAIL() << "compile succeeded without a device";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("no CUDA device: ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// An FP8 layer as quant/fp8_rewrite.h makes it: x -> quantize -> conv (kF8) <- dequantize <- codes, scales.
// `then_fp32_relu`: the convolution feeds an fp32 ReLU, which makes the graph's other layers fp32.
Graph fp8_probe(std::int64_t channels, bool then_fp32_relu = false) {
  Graph g;
  const ValueId x = g.add_input("x", {-1, channels, 8, 8});
  const ValueId q = g.add_node(OpKind::kQuantize, "x.quantize", {x}, QuantizeAttrs{0.05f});
  const ValueId codes = g.add_constant("w.codes", Tensor(DType::kF8E4M3, {16, channels, 1, 1}));
  const ValueId scales = g.add_constant("w.scales", Tensor::from_f32({16}, std::vector<float>(16, 0.01f)));
  const ValueId w = g.add_node(OpKind::kDequantize, "w.dequantize", {codes, scales});
  const ValueId y = g.add_node(OpKind::kConv2d, "conv", {q, w}, ConvAttrs{});
  g.node(g.value(y).producer).precision = Precision::kF8;
  if (!then_fp32_relu) {
    g.mark_output(y);
    return g;
  }
  const ValueId relu = g.add_node(OpKind::kActivation, "relu", {y}, ActivationAttrs{Activation::kRelu});
  g.node(g.value(relu).producer).precision = Precision::kF32;
  g.mark_output(relu);
  return g;
}

TEST(CudaBackendTest, Fp8ConvolutionsNeedTheirQuantizePointsAndWideChannels) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const auto backend = make_backend("cuda");
  Graph good = fp8_probe(16);
  for (const Node& node : good.nodes()) EXPECT_TRUE(backend->supports(good, node)) << node.name;
  // cuDNN's FP8 kernels take channel counts that are multiples of 16 (a C=3 stem is not one).
  Graph narrow = fp8_probe(3);
  EXPECT_FALSE(backend->supports(narrow, narrow.node(narrow.value(narrow.outputs()[0]).producer)));
  // An FP8 convolution reading an unquantized tensor is not an FP8 layer the backend knows.
  GraphMaker m;
  const ValueId x = m.input("x", {16, 8, 8});
  const ValueId y = m.conv(x, 16, conv_attrs(3, 1, 1));
  m.output(y);
  Node& conv = m.producer(y);
  EXPECT_TRUE(backend->supports(m.graph, conv));
  conv.precision = Precision::kF8;
  EXPECT_FALSE(backend->supports(m.graph, conv));
}

TEST(CudaBackendTest, SeveralInputsOfRankTwoOrFour) {
  KILN_SKIP_WITHOUT_GPU();
  GraphMaker m;
  const ValueId x = m.input("x", {16, 8, 8});
  const ValueId residual = m.input("residual", {16, 8, 8});
  const ValueId main = m.conv(x, 16, conv_attrs(3, 1, 1));
  m.output(m.node(OpKind::kAdd, {main, residual}, AddAttrs{Activation::kRelu}));
  expect_cuda_matches_reference(m.graph, {random_tensor({2, 16, 8, 8}, 31), random_tensor({2, 16, 8, 8}, 32)},
                                kF32Tolerance);
  GraphMaker h;
  const ValueId features = h.input("features", {32});
  const ValueId shift = h.input("shift", {10});
  const ValueId logits =
      h.node(OpKind::kLinear, {features, h.constant("w", {10, 32}), h.constant("b", {10})});
  h.output(h.node(OpKind::kAdd, {logits, shift}, AddAttrs{}));
  h.output(h.node(OpKind::kActivation, {features}, ActivationAttrs{Activation::kSigmoid}));
  expect_cuda_matches_reference(h.graph, {random_tensor({3, 32}, 33), random_tensor({3, 10}, 34)},
                                kF32Tolerance);
  const Graph fp16 = as_fp16(h.graph);
  expect_cuda_matches_reference(fp16, {random_tensor({3, 32}, 35), random_tensor({3, 10}, 36)},
                                kF16Tolerance);
}

// An attention wider than its kernel's shared memory holds (key_dim + head_dim above 160).
TEST(CudaBackendTest, LayersNoKernelRunsAreNotSupported) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  GraphMaker m;
  const ValueId x = m.input("x", {2 * 64 + 128, 8, 8});
  const ValueId mixed = m.node(OpKind::kAttention, {x}, AttentionAttrs{1, 64, 128});
  m.output(mixed);
  EXPECT_FALSE(make_backend("cuda")->supports(m.graph, m.producer(mixed)));
}

struct NetworkCase {
  bool fused;
  bool fp16;
  std::int64_t batch;
  std::int64_t opt_level;
};

// Printed by name, not as raw bytes (which would include the struct's padding).
void PrintTo(const NetworkCase& c, std::ostream* out) {
  *out << (c.fused ? "fused" : "unfused") << (c.fp16 ? " fp16" : " fp32") << " batch " << c.batch << " opt "
       << c.opt_level;
}

testing::ResnestLikeOptions small_resnest() {
  testing::ResnestLikeOptions o;
  o.image = 64;
  o.stem_width = 8;
  o.base_width = 16;
  o.depths = {1, 1, 1, 1};
  o.classes = 10;
  return o;
}

class CudaNetworkTest : public ::testing::TestWithParam<NetworkCase> {};

TEST_P(CudaNetworkTest, MatchesReference) {
  KILN_SKIP_WITHOUT_GPU();
  const NetworkCase c = GetParam();
  testing::ResnestLikeOptions o = small_resnest();
  o.depths = {2, 1, 1, 1};
  o.fused = c.fused;
  const Graph graph = c.fp16 ? as_fp16(testing::resnest_like_graph(o)) : testing::resnest_like_graph(o);
  expect_cuda_matches_reference(graph, {random_tensor({c.batch, 3, 64, 64}, 7)},
                                c.fp16 ? kF16Tolerance : kF32Tolerance, c.opt_level);
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaNetworkTest,
                         ::testing::Values(NetworkCase{true, false, 1, 1}, NetworkCase{false, false, 2, 0},
                                           NetworkCase{true, true, 1, 1}, NetworkCase{true, true, 4, 0}),
                         [](const ::testing::TestParamInfo<NetworkCase>& param_info) {
                           const NetworkCase& c = param_info.param;
                           return std::string(c.fused ? "fused" : "unfused") + (c.fp16 ? "_fp16" : "_fp32") +
                                  "_b" + std::to_string(c.batch) + "_O" + std::to_string(c.opt_level);
                         });

TEST(CudaBackendTest, ReplaysSeeEachRunsOwnInput) {
  KILN_SKIP_WITHOUT_GPU();
  testing::ResnestLikeOptions o;
  o.image = 32;
  o.stem_width = 8;
  o.base_width = 8;
  o.depths = {1, 1, 1, 1};
  o.classes = 5;
  const Graph graph = testing::resnest_like_graph(o);
  CompileOptions options;
  options.batch = 2;
  auto model = make_backend("cuda")->compile(graph, options);
  const Tensor a = random_tensor({2, 3, 32, 32}, 11), b = random_tensor({2, 3, 32, 32}, 12);
  const Tensor ya = model->run({a}).front();
  const Tensor yb = model->run({b}).front();
  EXPECT_LE(relative_difference(ya, run_on("cpu-reference", graph, {a}).front()), kF32Tolerance);
  EXPECT_LE(relative_difference(yb, run_on("cpu-reference", graph, {b}).front()), kF32Tolerance);
  const auto replay_ms = model->time_device_replays(3);
  ASSERT_TRUE(replay_ms.has_value());
  EXPECT_GT(*replay_ms, 0.0);
}

TEST(CudaBackendTest, GatesAndClassifierRunOnTheirOwnKernels) {
  KILN_SKIP_WITHOUT_GPU();
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    const Graph base = testing::resnest_like_graph(small_resnest());
    const Graph graph = fp16 ? as_fp16(base) : base;
    CompileOptions options;
    options.opt_level = 1;
    options.batch = 3;
    const auto model = make_backend("cuda")->compile(graph, options);
    const std::string steps = model->describe();
    EXPECT_EQ(count_of(steps, "squeeze_mlp"), 4u) << steps;  // one attention gate per block
    EXPECT_EQ(count_of(steps, "linear cublaslt"), 1u) << steps;
    const Tensor x = random_tensor({3, 3, 64, 64}, 5);
    EXPECT_LE(relative_difference(model->run({x}).front(), run_on("cpu-reference", graph, {x}).front()),
              fp16 ? kF16Tolerance : kF32Tolerance);
  }
}

TEST(CudaBackendTest, StoredTacticsAreReusedWithoutTiming) {
  KILN_SKIP_WITHOUT_GPU();
  const Graph graph = as_fp16(testing::resnest_like_graph(small_resnest()));
  CompileOptions options;
  options.opt_level = 3;
  const auto timed = make_backend("cuda")->compile(graph, options);
  const auto chosen = timed->layer_data();
  ASSERT_FALSE(chosen.empty());
  for (const auto& [layer, data] : chosen) {
    ASSERT_TRUE(data.contains("tactic")) << layer;
    // Whichever kernel won the race on this GPU (cuDNN's, cuBLASLt's or one of kiln's own): each is stored
    // and restored the same way.
    const std::string api = data["tactic"].value("api", "");
    EXPECT_TRUE(api == "cudnn-graph" || api == "cudnn-legacy" || api == "cudnn-graph-dense" ||
                api == "cublaslt" || api == "kiln-mma" || api == "kiln-hopper" || api == "kiln-depthwise" ||
                api == "kiln-narrow")
        << layer << ": " << api;
    EXPECT_FALSE(data["tactic"].value("device", "").empty()) << layer;
    EXPECT_GT(data["tactic"].value("us", 0.0), 0.0) << layer << " was timed";
  }

  options.layer_data = chosen;
  const auto reused = make_backend("cuda")->compile(graph, options);
  const std::string steps = reused->describe();
  EXPECT_NE(steps.find(cat("tactics: ", chosen.size(), " from the plan, 0 from the cache, 0 timed")),
            std::string::npos)
      << steps;
  EXPECT_EQ(reused->layer_data(), chosen);
  const Tensor x = random_tensor({1, 3, 64, 64}, 9);
  EXPECT_LE(relative_difference(reused->run({x}).front(), timed->run({x}).front()), 1e-6);

  // Tactics timed on another GPU are chosen again.
  for (auto& [layer, data] : options.layer_data) data["tactic"]["device"] = "another GPU";
  const std::string again = make_backend("cuda")->compile(graph, options)->describe();
  EXPECT_NE(again.find(cat("0 from the plan (", chosen.size(), " stored for another GPU")), std::string::npos)
      << again;

  options.layer_data = chosen;
  options.layer_data.begin()->second["tactic"].erase("api");
  try {
    make_backend("cuda")->compile(graph, options);
    ADD_FAILURE() << "a malformed stored tactic was accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(cat("layer '", options.layer_data.begin()->first, "': malformed tactic")),
        std::string::npos)
        << e.what();
  }
}

// FP8 convolutions on Hopper's FP8 tensor cores (E4M3 codes, f32 accumulation, per-channel scales, fp16
// out) against the reference's simulation of the same layers. The CUDA kernels accumulate in another
// order, so some fp16 values land one rounding step away from the reference's, and at the next quantize
// point a value now and then crosses an E4M3 rounding boundary (one E4M3 step is 6 to 12%); through 20+
// FP8 layers that spreads. How far it spreads is measured, not guessed: the reference's own output moves
// by d when its input moves by fp16's roundoff (about 3e-2 on this network), and the CUDA backend must
// stay within 2d of it. A layout or scale mistake is O(1).
TEST(CudaBackendTest, Fp8ConvolutionsMatchTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  testing::ResnestLikeOptions o = small_resnest();
  o.stem_width = 16;  // every convolution but the first (3 input channels) takes FP8
  Graph graph = testing::resnest_like_graph(o);
  const std::vector<std::string> layers = testing::all_but_first_convolution(graph);
  ASSERT_GE(layers.size(), 20u);
  testing::to_fp8_network(graph, layers);
  const Tensor x = random_tensor({2, 3, 64, 64}, 21);
  const Tensor reference = run_on("cpu-reference", graph, {x}).front();
  const double noise =
      relative_difference(run_on("cpu-reference", graph, {jittered(x, 121)}).front(), reference);
  ASSERT_GT(noise, 0.0);
  ASSERT_LT(noise, 0.1);  // the network must not be so chaotic that the check means nothing
  for (const std::int64_t opt_level : {0, 1}) {
    SCOPED_TRACE(cat("opt level ", opt_level, ", the reference moves by ", noise, " under fp16 roundoff"));
    CompileOptions options;
    options.opt_level = opt_level;
    options.batch = 2;
    const auto model = make_backend("cuda")->compile(graph, options);
    const std::string steps = model->describe();
    // cuDNN's FP8 convolutions and cuBLASLt's FP8 GEMMs (the pointwise layers that take it).
    EXPECT_EQ(count_of(steps, "fp8 conv ") + count_of(steps, "fp8 gemm (cuBLASLt) "), layers.size()) << steps;
    EXPECT_GE(count_of(steps, "quantize to E4M3"), 1u) << steps;
    EXPECT_LE(relative_difference(model->run({x}).front(), reference), 2 * noise);
  }
}

// The residual stream in E4M3 (quantize_residuals()): each identity block's input is stored as codes only
// and its last convolution, kiln's Hopper kernel, reads them as its residual. Same bound as above: the
// reference simulates the adds reading the quantized value, and the GPU must stay within 2d of it.
TEST(CudaBackendTest, Fp8ResidualStreamInE4m3MatchesTheReference) {
  testing::ResnestLikeOptions o = small_resnest();
  o.stem_width = 16;
  o.depths = {2, 2, 1, 1};
  Graph graph = testing::resnest_like_graph(o);
  const std::vector<std::string> held =
      testing::to_fp8_network(graph, testing::all_but_first_convolution(graph), 0.02f, true);
  ASSERT_EQ(held.size(), 2u);  // the inputs of the two identity blocks
  KILN_SKIP_WITHOUT_GPU();
  if (!cuda::hopper::hopper_gpu()) GTEST_SKIP() << "only kiln's Hopper kernel reads E4M3 residuals";
  const Tensor x = random_tensor({2, 3, 64, 64}, 21);
  const Tensor reference = run_on("cpu-reference", graph, {x}).front();
  const double noise =
      relative_difference(run_on("cpu-reference", graph, {jittered(x, 121)}).front(), reference);
  ASSERT_GT(noise, 0.0);
  ASSERT_LT(noise, 0.1);
  CompileOptions options;
  options.batch = 2;
  const auto model = make_backend("cuda")->compile(graph, options);
  const std::string steps = model->describe();
  EXPECT_GE(testing::count_lines_with(steps, "kiln-hopper", "+residual"), held.size()) << steps;
  EXPECT_LE(relative_difference(model->run({x}).front(), reference), 2 * noise) << steps;
}

// An FP8 layer kiln's Hopper kernel runs races it against cuDNN's precompiled engines only, so a network
// of such layers (no grouped convolution: radix 1) builds without compiling a kernel at run time, the
// cost that dominates a cold FP8 build; the widest search (level 3) is where those engines were offered.
TEST(CudaBackendTest, Fp8LayersTheHopperKernelRunsCompileNothingAtRunTime) {
  testing::ResnestLikeOptions o = small_resnest();
  o.radix = 1;
  o.stem_width = 16;
  Graph graph = testing::resnest_like_graph(o);
  testing::to_fp8_network(graph, testing::all_but_first_convolution(graph));
  KILN_SKIP_WITHOUT_GPU();
  if (!cuda::hopper::hopper_gpu()) GTEST_SKIP() << "kiln's Hopper kernel runs on sm_90 only";
  CompileOptions options;
  options.batch = 2;
  options.opt_level = 3;
  const std::string steps = make_backend("cuda")->compile(graph, options)->describe();
  EXPECT_NE(steps.find("fp8 conv kiln-hopper"), std::string::npos) << steps;
  EXPECT_EQ(steps.find("runtime-compiled"), std::string::npos) << steps;
}

TEST(CudaBackendTest, Fp8AmongFp32LayersIsRefused) {
  KILN_SKIP_WITHOUT_GPU();
  const Graph graph = fp8_probe(16, true);
  try {
    make_backend("cuda")->compile(graph, {});
    ADD_FAILURE() << "an FP8 plan with fp32 layers compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--fp8-fallback fp16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
