// FP8 pointwise convolutions as cuBLASLt FP8 GEMMs (src/backends/cuda/gemm_fp8.h): which layers take the
// GEMM and which scalings an E4M3 D takes (host only), and, on a GPU: the GEMM writing E4M3 codes as D
// against kiln's quantization of the same values computed on the host (saturation included); the GEMM
// forced with KILN_CUDA_FP8_GEMM=only against the cpu-reference backend and against cuDNN's FP8 path,
// with a bias, ReLU, a residual and code-writing outputs, at ResNet's channel counts; which code-writing
// layers get the E4M3 D; and its tactics restored from a plan. The GPU tests skip without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
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
#include "backends/cuda/gemm_fp8.h"
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

TEST(CudaFp8GemmTest, PreferenceComesFromTheEnvironment) {
  using cuda::Fp8GemmPreference;
  ::unsetenv("KILN_CUDA_FP8_GEMM");
  EXPECT_EQ(cuda::fp8_gemm_preference(), Fp8GemmPreference::kRace);
  for (const auto& [value, expected] : {std::pair{"1", Fp8GemmPreference::kRace},
                                        {"0", Fp8GemmPreference::kNever},
                                        {"only", Fp8GemmPreference::kOnly}}) {
    ::setenv("KILN_CUDA_FP8_GEMM", value, 1);
    EXPECT_EQ(cuda::fp8_gemm_preference(), expected) << value;
  }
  ::setenv("KILN_CUDA_FP8_GEMM", "yes", 1);
  EXPECT_THROW(cuda::fp8_gemm_preference(), Error);
  ::unsetenv("KILN_CUDA_FP8_GEMM");
}

// cuBLASLt's outer-vector scaling has no D scale and no FP8 D: an E4M3 D takes the per-row alpha or
// the tensor-wide scale.
TEST(CudaFp8GemmTest, AnE4m3OutputTakesTheAlphaVectorOrTheScalar) {
  using cuda::Fp8Output;
  using cuda::Fp8Scaling;
  EXPECT_TRUE(cuda::fp8_gemm_supports(Fp8Scaling::kOuterVector, Fp8Output::kF16));
  EXPECT_TRUE(cuda::fp8_gemm_supports(Fp8Scaling::kAlphaVector, Fp8Output::kF16));
  EXPECT_FALSE(cuda::fp8_gemm_supports(Fp8Scaling::kOuterVector, Fp8Output::kE4m3));
  EXPECT_TRUE(cuda::fp8_gemm_supports(Fp8Scaling::kAlphaVector, Fp8Output::kE4m3));
  EXPECT_TRUE(cuda::fp8_gemm_supports(Fp8Scaling::kScalar, Fp8Output::kF16));
  EXPECT_TRUE(cuda::fp8_gemm_supports(Fp8Scaling::kScalar, Fp8Output::kE4m3));
}

// One GEMM writing E4M3 codes as D, run on the device with random operands: its codes, and y as kiln's
// quantize kernel reads it (computed on the host, rounded to fp16).
struct CodesCase {
  int c, k;
  Act act;
  bool residual;
  float scale;               // the readers' quantize scale
  cuda::Fp8Scaling scaling;  // kAlphaVector: a scale per channel; kScalar: one for all
  std::string name() const {
    return cat(c, "->", k, " act ", static_cast<int>(act), residual ? " +residual" : "", " scale ", scale,
               scaling == cuda::Fp8Scaling::kScalar ? " one channel scale" : " channel scales");
  }
};

struct CodesRun {
  std::vector<std::uint8_t> gemm;
  std::vector<float> stored;
};

struct CublasLtHandle {
  cublasLtHandle_t handle = nullptr;
  CublasLtHandle() { cuda::check(cublasLtCreate(&handle), "creating a cuBLASLt handle"); }
  ~CublasLtHandle() { cublasLtDestroy(handle); }
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
};

// y = act(sum of code products * channel[k] + bias[k] (+ residual)) in double, as f32, rounded to fp16.
std::vector<float> stored_outputs(const CodesCase& t, const Tensor& x, const Tensor& w, const Tensor& channel,
                                  const Tensor& bias, const Tensor& residual) {
  const std::int64_t rows = x.dim(0);
  std::vector<float> stored(static_cast<std::size_t>(rows * t.k));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < t.k; ++k) {
      double acc = 0;
      for (std::int64_t c = 0; c < t.c; ++c)
        acc += double{x.f32()[static_cast<std::size_t>(r * t.c + c)]} *
               w.f32()[static_cast<std::size_t>(k * t.c + c)];
      const auto i = static_cast<std::size_t>(r * t.k + k);
      double v = acc * channel.f32()[static_cast<std::size_t>(k)] + bias.f32()[static_cast<std::size_t>(k)];
      if (t.residual) v += residual.f32()[i];
      if (t.act == Act::kRelu) v = std::max(v, 0.0);
      stored[i] = round_to_f16(static_cast<float>(v));
    }
  }
  return stored;
}

// False (a failure) where cuBLASLt offers no algorithm.
bool run_e4m3_gemm(const CodesCase& t, CodesRun& run) {
  const ConvGeometry g = pointwise(t.c, t.k);
  const std::int64_t rows = std::int64_t{g.n} * g.h * g.w;
  const Tensor x = testing::random_tensor({rows, t.c}, 3, -4.0f, 4.0f).to(DType::kF8E4M3);
  const Tensor w = testing::random_tensor({t.k, t.c}, 5, -2.0f, 2.0f).to(DType::kF8E4M3);
  const bool uniform = t.scaling == cuda::Fp8Scaling::kScalar;
  Tensor channel = testing::random_tensor({t.k}, 11, 0.005f, 0.02f);
  if (uniform) std::ranges::fill(channel.mutable_f32(), 0.0125f);
  const Tensor bias = testing::held(testing::random_tensor({t.k}, 13, -0.5f, 0.5f), true);
  const Tensor residual = testing::held(testing::random_tensor({rows, t.k}, 17, -1.0f, 1.0f), true);
  Tensor reciprocal(DType::kF32, {1});
  reciprocal.mutable_f32()[0] = 1.0f / t.scale;
  const cuda::DeviceBuffer dx = testing::on_device(x, false), dw = testing::on_device(w, false),
                           dchannel = testing::on_device(channel, false),
                           dbias = testing::on_device(bias, true),
                           dresidual = testing::on_device(residual, true),
                           dreciprocal = testing::on_device(reciprocal, false);
  cuda::DeviceBuffer codes(static_cast<std::size_t>(rows * t.k)), workspace(std::size_t{32} << 20);
  const CublasLtHandle lt;
  const cuda::Fp8GemmScales scales{static_cast<const float*>(dchannel.data()), nullptr,
                                   static_cast<const float*>(dreciprocal.data()), uniform};
  CublasLtFp8Conv gemm(lt.handle, g, {t.act, t.residual, t.scaling, cuda::Fp8Output::kE4m3}, scales);
  const cuda::Fp8GemmBuffers io{dx.data(), dw.data(),   dbias.data(), t.residual ? dresidual.data() : nullptr,
                                nullptr,   codes.data()};
  cuda::TacticRace<cuda::MatmulTactic> race(false, nullptr);
  gemm.offer_candidates(race, io, workspace.data(), workspace.bytes());
  if (!race.winner()) {
    ADD_FAILURE() << "cuBLASLt offers no algorithm for " << gemm.key();
    return false;
  }
  gemm.use(*race.winner());
  // NaN codes first, so that codes the GEMM does not write show.
  cuda::check(cudaMemset(codes.data(), 0xFF, codes.bytes()), "filling the codes");
  gemm.enqueue(io, workspace.data(), nullptr);
  cuda::check(cudaDeviceSynchronize(), "running the GEMM");
  run.gemm.resize(codes.bytes());
  cuda::check(cudaMemcpy(run.gemm.data(), codes.data(), codes.bytes(), cudaMemcpyDeviceToHost), "download");
  run.stored = stored_outputs(t, x.to(DType::kF32), w.to(DType::kF32), channel, bias, residual);
  return true;
}

// An E4M3 code's place in value order (both zeros at 0): neighbouring values are one apart.
int code_rank(std::uint8_t code) { return (code & 0x80) != 0 ? -(code & 0x7F) : code & 0x7F; }
bool is_nan_code(std::uint8_t code) { return (code & 0x7F) == 0x7F; }

// cuBLASLt's codes against kiln's quantization of the same y (quantize_e4m3: y rounded to fp16, divided
// by the scale, rounded to nearest even, saturating). cuBLASLt converts the f32 y times 1/scale once, so
// a code may differ by one step where y lies next to an E4M3 rounding midpoint: within fp16's rounding
// of y (at most 2^-11 of |y|; the f32 sums' and the reciprocal's last bits are far smaller). A binade of
// E4M3 has 8 steps, so such a neighbourhood covers at most 2 * 2^-11 * 2 / 2^-3 = 2^-6 of the values:
// at most 1 code in 64 may differ, each by one step.
void expect_codes_match(const CodesRun& run, float scale) {
  ASSERT_EQ(run.gemm.size(), run.stored.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < run.gemm.size(); ++i) {
    const std::uint8_t ours = run.gemm[i], kiln = f32_to_e4m3(run.stored[i] / scale);
    ASSERT_FALSE(is_nan_code(ours)) << "code " << i << " is NaN; y " << run.stored[i];
    if (code_rank(ours) == code_rank(kiln)) continue;
    ++differing;
    EXPECT_EQ(std::abs(code_rank(ours) - code_rank(kiln)), 1)
        << "code " << i << ": " << int{ours} << " against " << int{kiln} << "; y " << run.stored[i];
  }
  EXPECT_LE(differing, run.gemm.size() / 64) << differing << " of " << run.gemm.size() << " codes differ";
}

// Per-channel scales (the per-row alpha) and one scale for every channel (the tensor-wide scale).
// Disabled: on the H200 (cuBLASLt 13.1) the per-channel cases find no algorithm and the one-scale cases
// differ by up to 7 code steps on small values, so compiled programs do not offer the E4M3 D
// (fp8_gemm_e4m3_enabled()); run with --gtest_also_run_disabled_tests when working on it.
TEST(CudaFp8GemmTest, DISABLED_E4m3OutputMatchesKilnQuantization) {
  KILN_SKIP_WITHOUT_GPU();
  // y spans about +-2 (its fp16 rounding matters), codes up to a few hundred.
  constexpr float kScale = 0.01f;
  for (const cuda::Fp8Scaling scaling : {cuda::Fp8Scaling::kAlphaVector, cuda::Fp8Scaling::kScalar}) {
    for (const CodesCase& t : {CodesCase{64, 64, Act::kNone, false, kScale, scaling},
                               {64, 64, Act::kRelu, true, kScale, scaling},
                               {256, 128, Act::kRelu, false, kScale, scaling},
                               {256, 128, Act::kNone, true, kScale, scaling}}) {
      SCOPED_TRACE(t.name());
      CodesRun run;
      if (!run_e4m3_gemm(t, run)) continue;
      expect_codes_match(run, t.scale);
      // Most codes are neither zero nor saturated: the rounding is what is compared.
      const auto inside = std::ranges::count_if(run.stored, [&](float y) {
        const float q = std::abs(y / t.scale);
        return q >= 1.0f && q < kE4M3Max;
      });
      EXPECT_GT(inside, static_cast<std::ptrdiff_t>(run.stored.size() / 3));
    }
  }
}

// Values beyond 448 times the scale give +-448's code, as kiln's quantizer does, never NaN.
// Disabled with the test above (the same runs fail there first).
TEST(CudaFp8GemmTest, DISABLED_E4m3OutputSaturates) {
  KILN_SKIP_WITHOUT_GPU();
  constexpr float kTinyScale = 1e-4f;  // |y| / scale mostly in the thousands
  for (const cuda::Fp8Scaling scaling : {cuda::Fp8Scaling::kAlphaVector, cuda::Fp8Scaling::kScalar}) {
    for (const CodesCase& t : {CodesCase{64, 64, Act::kNone, true, kTinyScale, scaling},
                               {256, 128, Act::kRelu, false, kTinyScale, scaling}}) {
      SCOPED_TRACE(t.name());
      CodesRun run;
      if (!run_e4m3_gemm(t, run)) continue;
      expect_codes_match(run, t.scale);
      std::size_t beyond = 0;
      for (std::size_t i = 0; i < run.gemm.size(); ++i) {
        if (std::abs(run.stored[i] / t.scale) < 2 * kE4M3Max) continue;
        ++beyond;
        EXPECT_EQ(run.gemm[i], run.stored[i] < 0 ? 0xFE : 0x7E) << "code " << i << "; y " << run.stored[i];
      }
      EXPECT_GT(beyond, run.gemm.size() / 4);
    }
  }
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

// Compiles with KILN_CUDA_FP8_GEMM=`preference`.
std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options,
                                       const char* preference) {
  ::setenv("KILN_CUDA_FP8_GEMM", preference, 1);
  auto model = make_backend("cuda")->compile(graph, options);
  ::unsetenv("KILN_CUDA_FP8_GEMM");
  return model;
}

std::size_t occurrences(const std::string& describe, const std::string& text) {
  std::size_t count = 0;
  for (auto at = describe.find(text); at != std::string::npos; at = describe.find(text, at + 1)) ++count;
  return count;
}
std::size_t gemm_steps(const std::string& describe) { return occurrences(describe, "fp8 gemm (cuBLASLt)"); }
std::size_t e4m3_gemm_steps(const std::string& describe) {
  return occurrences(describe, "(cuBLASLt writes the E4M3 codes)");
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
      const auto cudnn = compile(graph, options, "0");
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
// layers read its output or its fp16 output is read too (a dual write): the E4M3 D is off by default
// (fp8_gemm_e4m3_enabled()).
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
      EXPECT_EQ(e4m3_gemm_steps(steps), 0u) << steps;
      EXPECT_EQ(occurrences(steps, "(dual write) (quantize kernel)"), dual ? 1u : 0u) << steps;
      EXPECT_EQ(occurrences(steps, "(quantize kernel)"), 1u) << steps;
      const std::vector<Tensor> inputs = case_inputs(graph, 8);
      expect_close(model->run(inputs), testing::run_on("cpu-reference", graph, inputs), kFp8Tolerance,
                   "against the reference");
    }
  }
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
    EXPECT_EQ(e4m3_gemm_steps(forced_steps), 0u) << forced_steps;
    options.layer_data = forced->layer_data();
    const auto restored = compile(graph, options, "1");
    const std::string steps = restored->describe();
    EXPECT_EQ(gemm_steps(steps), 2u) << steps;
    EXPECT_EQ(e4m3_gemm_steps(steps), e4m3_gemm_steps(forced_steps)) << steps;
    EXPECT_NE(steps.find("tactics: 2 from the plan,"), std::string::npos) << steps;
    const std::vector<Tensor> inputs = case_inputs(graph, 4);
    expect_close(restored->run(inputs), forced->run(inputs), 1e-3, "against the forced compile");
  }
}

}  // namespace
}  // namespace kiln
