// FP8 pointwise convolutions as cuBLASLt FP8 GEMMs (src/backends/cuda/convolution/cublaslt_fp8_conv.h): which
// layers take the GEMM (host only), and, on a GPU: the GEMM forced with the fp8-gemm=only option against the
// cpu-reference backend and against cuDNN's FP8 path (fp8-gemm=off), with a bias, ReLU, a residual and
// code-writing outputs, at ResNet's channel counts; code-writing layers running the GEMM then the
// quantize kernel; and its tactics restored from a plan. The GPU tests skip without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda_test_util.h"
#include "fp8_graph_util.h"
#include "onednn_test_util.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/convolution/cublaslt_fp8_conv.h"
#include "cuda_kernel_test_util.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;

#if KILN_HAVE_CUDA
using cuda::Act;
using cuda::ConvGeometry;
using cuda::CublasLtFp8Conv;

ConvGeometry pointwise(int c, int k) {
  ConvGeometry g;
  std::tie(g.n, g.c, g.h, g.w, g.k, g.out_h, g.out_w) = std::make_tuple(2, c, 14, 14, k, 14, 14);
  return g;
}

TEST(CudaFp8GemmTest, TakesPointwiseDenseLayersOnly) {
  for (const auto& [c, k] : {std::pair{64, 256}, {256, 64}, {1024, 2048}, {16, 16}}) {
    EXPECT_TRUE(CublasLtFp8Conv::takes(pointwise(c, k), Act::kNone)) << c << " -> " << k;
    EXPECT_TRUE(CublasLtFp8Conv::takes(pointwise(c, k), Act::kRelu)) << c << " -> " << k;
  }
  EXPECT_FALSE(CublasLtFp8Conv::takes(pointwise(64, 256), Act::kSilu));
  EXPECT_FALSE(CublasLtFp8Conv::takes(pointwise(64, 256), Act::kSigmoid));
  EXPECT_FALSE(CublasLtFp8Conv::takes(pointwise(24, 256), Act::kNone));  // C not a multiple of 16
  EXPECT_FALSE(CublasLtFp8Conv::takes(pointwise(64, 40), Act::kNone));   // K not a multiple of 16
  ConvGeometry g = pointwise(64, 64);
  g.r = g.s = 3;
  g.pad_h = g.pad_w = 1;
  EXPECT_FALSE(CublasLtFp8Conv::takes(g, Act::kNone));  // 3x3
  g = pointwise(64, 64);
  g.stride_h = g.stride_w = 2;
  g.out_h = g.out_w = 7;
  EXPECT_FALSE(CublasLtFp8Conv::takes(g, Act::kNone));  // strided
  g = pointwise(64, 64);
  g.pad_h = g.pad_w = 1;
  g.out_h = g.out_w = 16;
  EXPECT_FALSE(CublasLtFp8Conv::takes(g, Act::kNone));  // padded
  g = pointwise(64, 64);
  g.groups = 2;
  EXPECT_FALSE(CublasLtFp8Conv::takes(g, Act::kNone));  // grouped
  ConvGeometry linear;                                  // a linear layer's geometry: 1x1 over one pixel
  std::tie(linear.n, linear.c, linear.k) = std::make_tuple(4, 512, 1024);
  EXPECT_TRUE(CublasLtFp8Conv::takes(linear, Act::kRelu));
}

#endif  // KILN_HAVE_CUDA

// The op test's FP8 bound (op_test/op_case.h): a wrong scale, bias, residual or index is O(1).
constexpr double kFp8Tolerance = 0x1p-4;
// The GEMM against cuDNN's FP8 path on the same codes: they differ by the fp16 rounding of the bias and
// the order of the f32 sums (and, behind a code-writing layer, the odd code rounded the other way).
constexpr double kCudnnTolerance = 1e-2;
constexpr float kInputScale = 0.02f;  // inputs in [-4, 4) are codes up to 200
constexpr float kOutputScale = 0.05f;

struct GemmCase {
  std::int64_t c, k, extent;  // channels in and out, image height and width
  Activation act;
  bool residual;  // act(conv + bias + residual), the add computed by the convolution
  bool codes;     // the output's E4M3 codes feed a second FP8 1x1 convolution
  std::string name() const {
    return cat(c, "->", k, " ", activation_name(act), residual ? " +residual" : "", codes ? " codes" : "");
  }
};

// dual: the first convolution's output is a graph output too, so it writes fp16 y besides the codes.
Graph pointwise_graph(const GemmCase& t, bool dual = false) {
  testing::SmallGraph g;
  const ValueId x = g.input("x", {t.c, t.extent, t.extent});
  const ConvAttrs attrs = conv_attrs(1, 1, 0, 1, t.residual ? Activation::kNone : t.act);
  ValueId y = testing::fp8_conv(g, testing::quantize(g, x, kInputScale), t.k, attrs);
  if (t.residual) y = g.node(OpKind::kAdd, {y, g.input("r", {t.k, t.extent, t.extent})}, AddAttrs{t.act});
  if (dual) g.output(y);
  if (t.codes)
    y = testing::fp8_conv(g, testing::quantize(g, y, kOutputScale), 64, conv_attrs(1, 1, 0), true, 37);
  g.output(y);
  assign_precision(g.graph, Precision::kF16);
  widen_constants_to_f32(g.graph);
  return std::move(g.graph);
}

std::vector<Tensor> case_inputs(const Graph& graph, std::int64_t batch) {
  std::vector<Tensor> inputs;
  for (const ValueId input : graph.inputs()) {
    Shape shape = graph.value(input).shape;
    shape[0] = batch;
    inputs.push_back(
        testing::random_tensor(shape, 7 + static_cast<std::uint32_t>(inputs.size()), -4.0f, 4.0f));
  }
  return inputs;
}

// Compiles with the cuda backend's fp8-gemm option set to `choice` (race, off or only).
std::unique_ptr<CompiledModel> compile(const Graph& graph, CompileOptions options, const char* choice) {
  options.backend_options = {{"fp8-gemm", choice}};
  return make_backend("cuda")->compile(graph, options);
}

std::size_t gemm_steps(const std::string& describe) {
  return testing::count_of(describe, "fp8 gemm (cuBLASLt)");
}

void expect_close(const std::vector<Tensor>& ours, const std::vector<Tensor>& ref, double tolerance,
                  const char* what) {
  ASSERT_EQ(ours.size(), ref.size());
  for (std::size_t i = 0; i < ours.size(); ++i)
    EXPECT_LE(testing::relative_difference(ours[i], ref[i]), tolerance) << what << ", output " << i;
}

TEST(CudaFp8GemmTest, PointwiseConvolutionsMatchTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  const std::vector<GemmCase> cases = {
      {64, 256, 14, Activation::kNone, false, false},  {64, 256, 14, Activation::kRelu, true, false},
      {256, 64, 14, Activation::kRelu, false, false},  {256, 64, 14, Activation::kRelu, false, true},
      {1024, 2048, 4, Activation::kNone, true, false}, {1024, 2048, 4, Activation::kRelu, false, true},
      {256, 64, 14, Activation::kNone, true, true}};
  for (const GemmCase& t : cases) {
    const Graph graph = pointwise_graph(t);
    for (const std::int64_t batch : {1, 32}) {
      SCOPED_TRACE(cat(t.name(), ", batch ", batch));
      const std::vector<Tensor> inputs = case_inputs(graph, batch);
      CompileOptions options;
      options.batch = batch;
      options.opt_level = 1;
      const auto gemm = compile(graph, options, "only");
      EXPECT_EQ(gemm_steps(gemm->describe()), t.codes ? 2u : 1u) << gemm->describe();
      const std::vector<Tensor> ours = gemm->run(inputs);
      expect_close(ours, testing::run_on("cpu-reference", graph, inputs), kFp8Tolerance,
                   "against the reference");
      const auto cudnn = compile(graph, options, "off");
      EXPECT_EQ(gemm_steps(cudnn->describe()), 0u) << cudnn->describe();
      expect_close(ours, cudnn->run(inputs), kCudnnTolerance, "against cuDNN");
    }
  }
}

// Every FP8 layer's weights with one scale, as a plan quantized with one weight scale per tensor has.
void with_one_weight_scale(Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.op == OpKind::kDequantize)
      std::ranges::fill(graph.value(node.inputs[1]).constant.mutable_f32(), 0.03f);
  }
}

// A layer writing codes runs the GEMM with an fp16 D followed by the quantize kernel, whether only FP8
// layers read its output or its fp16 output is read too (a dual write).
TEST(CudaFp8GemmTest, CodeWritingLayersRunTheGemmThenTheQuantizeKernel) {
  KILN_SKIP_WITHOUT_GPU();
  for (const auto& [dual, one_scale] : {std::pair{false, false}, {false, true}, {true, false}}) {
    for (const GemmCase& t : {GemmCase{256, 64, 14, Activation::kRelu, false, true},
                              {64, 256, 14, Activation::kNone, true, true},
                              {1024, 2048, 4, Activation::kRelu, true, true}}) {
      SCOPED_TRACE(cat(t.name(), dual ? " dual" : "", one_scale ? " one weight scale" : ""));
      Graph graph = pointwise_graph(t, dual);
      if (one_scale) with_one_weight_scale(graph);
      CompileOptions options;
      options.batch = 8;
      options.opt_level = 0;
      const auto model = compile(graph, options, "only");
      const std::string steps = model->describe();
      EXPECT_EQ(gemm_steps(steps), 2u) << steps;
      EXPECT_EQ(testing::count_of(steps, "(dual write) (quantize kernel)"), dual ? 1u : 0u) << steps;
      EXPECT_EQ(testing::count_of(steps, "(quantize kernel)"), 1u) << steps;
      const std::vector<Tensor> inputs = case_inputs(graph, 8);
      expect_close(model->run(inputs), testing::run_on("cpu-reference", graph, inputs), kFp8Tolerance,
                   "against the reference");
    }
  }
}

// A profile reports the quantize kernel after a layer as quantization, not as the layer's convolution.
TEST(CudaFp8GemmTest, AProfileReportsTheQuantizeKernelAsQuantization) {
  KILN_SKIP_WITHOUT_GPU();
  const GemmCase t{256, 64, 14, Activation::kRelu, false, true};
  const Graph graph = pointwise_graph(t, false);
  CompileOptions options;
  options.batch = 8;
  options.opt_level = 0;
  options.profile = true;
  const auto model = compile(graph, options, "only");
  ASSERT_EQ(testing::count_of(model->describe(), "(quantize kernel)"), 1u) << model->describe();
  model->run(case_inputs(graph, 8));
  const std::vector<LayerTime> profile = model->last_profile();
  const auto quantize_entries = std::ranges::count_if(
      profile, [](const LayerTime& l) { return l.op == OpKind::kQuantize && l.milliseconds > 0.0; });
  EXPECT_GE(quantize_entries, 1) << model->describe();
}

// Layers the GEMM does not take stay on cuDNN, even when forced: SiLU, 3x3, strided.
TEST(CudaFp8GemmTest, OtherLayersStayOnCudnn) {
  KILN_SKIP_WITHOUT_GPU();
  testing::SmallGraph g;
  const ValueId x = g.input("x", {64, 8, 8});
  const ValueId silu = testing::fp8_conv(g, testing::quantize(g, x, kInputScale), 64,
                                         conv_attrs(1, 1, 0, 1, Activation::kSilu));
  const ValueId wide =
      testing::fp8_conv(g, testing::quantize(g, silu, kOutputScale), 64, conv_attrs(3, 1, 1));
  g.output(testing::fp8_conv(g, testing::quantize(g, wide, kOutputScale), 64, conv_attrs(1, 2, 0)));
  assign_precision(g.graph, Precision::kF16);
  widen_constants_to_f32(g.graph);
  CompileOptions options;
  options.batch = 2;
  const auto model = compile(g.graph, options, "only");
  EXPECT_EQ(gemm_steps(model->describe()), 0u) << model->describe();
  const std::vector<Tensor> inputs = case_inputs(g.graph, 2);
  expect_close(model->run(inputs), testing::run_on("cpu-reference", g.graph, inputs), kFp8Tolerance,
               "against the reference");
}

// A plan's GEMM tactics are restored (with the GEMM no longer forced), and run as they did: chosen
// without timing or by it, with a scale per channel or one for all.
TEST(CudaFp8GemmTest, StoredTacticsRestore) {
  KILN_SKIP_WITHOUT_GPU();
  for (const auto& [opt_level, one_scale] : {std::pair{0, false}, {0, true}, {1, false}}) {
    SCOPED_TRACE(cat("opt level ", opt_level, one_scale ? ", one weight scale" : ""));
    Graph graph = pointwise_graph({256, 64, 14, Activation::kRelu, true, true});
    if (one_scale) with_one_weight_scale(graph);
    CompileOptions options;
    options.batch = 4;
    options.opt_level = opt_level;
    const auto forced = compile(graph, options, "only");
    const std::string forced_steps = forced->describe();
    ASSERT_EQ(gemm_steps(forced_steps), 2u) << forced_steps;
    options.layer_data = forced->layer_data();
    const auto restored = compile(graph, options, "race");
    const std::string steps = restored->describe();
    EXPECT_EQ(gemm_steps(steps), 2u) << steps;
    EXPECT_NE(steps.find("tactics: 2 from the plan,"), std::string::npos) << steps;
    const std::vector<Tensor> inputs = case_inputs(graph, 4);
    expect_close(restored->run(inputs), forced->run(inputs), 1e-3, "against the forced compile");
  }
}

}  // namespace
}  // namespace kiln
