// The FP8 simulation, calibration and the auto recipe on a small ResNeSt built from a synthetic
// checkpoint: what the executor computes for an FP8 layer, what calibration observes, and how the auto
// search brackets its target.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "reference/executor.h"
#include "reference/kernels.h"
#include "families/timm_resnest/builder.h"
#include "graph/precision_assignment.h"
#include "passes/pass_manager.h"
#include "quant/activation_calibration.h"
#include "quant/auto_recipe.h"
#include "quant/calibration_method.h"
#include "quant/fp8_build.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"
#include "quant/shared_calibration.h"
#include "backends/backend.h"
#include "tests/families/family_test_util.h"
#include "tests/families/synthetic_checkpoint.h"

namespace kiln {
namespace {

using testing::error_of;

// A small ResNeSt of `blocks` bottlenecks in each stage.
Graph small_resnest(std::vector<std::int64_t> blocks = {1, 1, 1, 1}) {
  testing::ResNestSpec spec;
  spec.layers = std::move(blocks);
  spec.channels = {8, 16, 32, 64};
  spec.stem_width = 8;
  spec.num_classes = 10;
  ModelConfig config;
  config.architecture = "resnest50d";
  config.num_classes = 10;
  config.preprocess.input_size = 32;
  Graph graph = build_timm_resnest(testing::resnest_checkpoint(spec, 7), config, 1);
  run_passes(graph);
  graph.compact();
  return graph;
}

Tensor image(std::uint32_t seed) {
  Tensor x(DType::kF32, {1, 3, 32, 32});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x.mutable_f32()) v = normal(rng);
  return x;
}

// The backend calibration and the auto search run on: the fast one when it is built.
std::string fast_backend() { return std::string(backend_names().front()); }

TEST(Fp8Simulation, AnFp8LayerIsFakeQuantizedConvolutionWrittenInFp16) {
  Graph graph = small_resnest();
  const std::string layer = "layer2.0.conv1";
  const NodeId id = *graph.find_node(layer);
  const ValueId x = graph.node(id).inputs[0];
  const Tensor weight = graph.value(graph.node(id).inputs[1]).constant;
  const Tensor bias = graph.value(graph.node(id).inputs[2]).constant;
  const ConvAttrs attrs = graph.node(id).attr<ConvAttrs>();
  const float scale = 0.03125f;
  rewrite_to_fp8(graph, {layer}, {{{graph.value(x).name, scale}}});

  // What the layer read and wrote in the simulation.
  Tensor seen_input, seen_output;
  const Tensor input = image(3);
  run_reference(graph, {input}, [&](const Node& node, const Tensor& out) {
    if (node.output == x) seen_input = out;
    if (node.name == layer) seen_output = out;
  });
  ASSERT_FALSE(seen_input.empty());
  // Independently: fake-quantize input and weights, convolve, round to fp16.
  Tensor xq = seen_input.clone();
  for (float& v : xq.mutable_f32()) v = round_to_e4m3(v / scale) * scale;
  Tensor wq = weight.clone();
  const auto channels = static_cast<std::size_t>(weight.dim(0));
  const std::size_t per_channel = weight.f32().size() / channels;
  for (std::size_t c = 0; c < channels; ++c) {
    float amax = 0.0f;
    for (std::size_t k = 0; k < per_channel; ++k)
      amax = std::max(amax, std::fabs(weight.f32()[c * per_channel + k]));
    const float s = amax / 448.0f;
    for (std::size_t k = 0; k < per_channel; ++k) {
      float& w = wq.mutable_f32()[c * per_channel + k];
      w = round_to_e4m3(w / s) * s;
    }
  }
  Tensor expected = reference::conv2d(xq, wq, &bias, attrs);
  for (float& v : expected.mutable_f32()) v = round_to_f16(v);
  ASSERT_EQ(seen_output.numel(), expected.numel());
  for (std::size_t i = 0; i < expected.f32().size(); ++i) {
    ASSERT_EQ(seen_output.f32()[i], expected.f32()[i]) << "element " << i;
  }
}

// With the residual stream in E4M3 the identity block's add reads the quantize point: the value the
// block's first FP8 layer reads, fake-quantized; the cpu backend computes the same network as the
// simulation (one fp16 rounding apart at most per value, far below one E4M3 step).
TEST(Fp8Simulation, ResidualAddsReadTheQuantizedValue) {
  Graph graph = small_resnest({2, 1, 1, 1});
  const std::vector<std::string> layers = quantizable_layers(graph);
  std::map<std::string, float> scales;
  for (const ValueId v : fp8_activation_inputs(graph, layers)) scales[graph.value(v).name] = 0.05f;
  rewrite_to_fp8(graph, layers, {scales});
  ASSERT_EQ(quantize_residuals(graph), std::vector<std::string>{"layer1.0.add"});
  assign_precision(graph, Precision::kF16);
  graph.compact();
  widen_constants_to_f32(graph);  // as the Engine hands graphs to executors and backends
  const NodeId add = *graph.find_node("layer1.1.add");
  const Node& point = graph.node(graph.value(graph.node(add).inputs[1]).producer);
  ASSERT_EQ(point.op, OpKind::kQuantize);
  Tensor block_input, quantized;
  const Tensor input = image(5);
  const Tensor reference = run_reference(graph, {input}, [&](const Node& node, const Tensor& out) {
    if (node.output == point.inputs[0]) block_input = out.clone();
    if (node.output == point.output) quantized = out.clone();
  }).front();
  ASSERT_FALSE(quantized.empty());
  for (std::size_t i = 0; i < quantized.f32().size(); ++i) {
    ASSERT_EQ(quantized.f32()[i], round_to_e4m3(block_input.f32()[i] / 0.05f) * 0.05f) << "element " << i;
  }
  const Tensor cpu = make_backend(fast_backend())->compile(graph, {})->run({input}).front();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < cpu.f32().size(); ++i) {
    diff += std::pow(cpu.f32()[i] - reference.f32()[i], 2);
    norm += std::pow(reference.f32()[i], 2);
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-2);
}

TEST(Fp8Simulation, CalibrationObservesWhatTheLayersRead) {
  const Graph graph = small_resnest();
  const auto layers = select_layers(graph, parse_recipe("all"));
  const auto tensors = fp8_activation_inputs(graph, layers);
  ActivationCalibration calibration(graph, tensors, fast_backend(), 1);
  std::map<std::string, float> amax;
  for (const std::uint32_t seed : {1u, 2u, 3u}) {
    const Tensor input = image(seed);
    calibration.observe(input);
    run_reference(graph, {input}, [&](const Node& node, const Tensor& out) {
      float& m = amax[graph.value(node.output).name];
      for (const float v : out.f32()) m = std::max(m, std::fabs(v));
    });
  }
  EXPECT_EQ(calibration.images(), 3u);
  const auto chosen = calibration.choose(CalibrationMethod::kMax);
  EXPECT_EQ(chosen.size(), tensors.size());
  for (const ValueId value : tensors) {
    const std::string& name = graph.value(value).name;
    SCOPED_TRACE(name);
    ASSERT_TRUE(amax.count(name));
    // oneDNN and the reference differ in summation order only.
    EXPECT_NEAR(calibration.histogram(name).amax(), amax[name], 1e-5 * amax[name]);
    EXPECT_NEAR(chosen.at(name).scale, amax[name] / 448.0f, 1e-5 * amax[name] / 448.0f);
  }
}

// A study's FP8 variants calibrate once: each recipe and calibrator chooses, from the shared pass over every
// quantizable layer's input, the scales its own pass would have chosen, and its graph is the same.
TEST(Fp8Simulation, SharedCalibrationGivesEachBuildWhatItsOwnPassWould) {
  const Graph graph = small_resnest();
  CalibrationImages own;
  for (const std::uint32_t seed : {21u, 22u, 23u, 24u, 25u}) own.images.push_back(image(seed));
  CalibrationImages shared = own;
  shared.shared = std::make_shared<SharedCalibration>();
  const std::vector<std::pair<std::string, CalibrationMethod>> builds = {
      {"nose-L1", CalibrationMethod::kMax},  // a subset first: the shared pass still covers `all` after it
      {"all", CalibrationMethod::kMax},
      {"all", CalibrationMethod::kEntropy},
      {"nose", CalibrationMethod::kPercentile},
      {"auto", CalibrationMethod::kMax}};
  for (const auto& [recipe, method] : builds) {
    SCOPED_TRACE(recipe + " " + std::string(calibration_method_name(method)));
    Fp8Settings settings;
    settings.recipe = recipe;
    settings.method = method;
    settings.backend = fast_backend();
    settings.threads = 1;
    settings.sensitivity_images = 3;
    Graph alone = graph;
    Graph together = graph;
    const nlohmann::json alone_report = quantize_fp8(alone, settings, own);
    const nlohmann::json together_report = quantize_fp8(together, settings, shared);
    ASSERT_EQ(alone_report.at("tensors").size(), together_report.at("tensors").size());
    for (const auto& [name, tensor] : alone_report.at("tensors").items()) {
      // Bit-equal, not close: each tensor's histogram holds the same values whichever others are observed.
      EXPECT_EQ(tensor.at("scale").get<float>(),
                together_report.at("tensors").at(name).at("scale").get<float>())
          << name;
    }
    EXPECT_EQ(alone_report.at("fp8_layers"), together_report.at("fp8_layers"));
  }
  EXPECT_EQ(shared.shared->passes(), 1u) << "every build on one graph shares one pass";
}

TEST(Fp8Simulation, AutoSearchBracketsItsTarget) {
  const Graph graph = small_resnest();
  const auto candidates = quantizable_layers(graph);
  const auto tensors = fp8_activation_inputs(graph, candidates);
  ActivationCalibration calibration(graph, tensors, fast_backend(), 1);
  std::vector<Tensor> images;
  for (const std::uint32_t seed : {11u, 12u, 13u, 14u}) {
    images.push_back(image(seed));
    calibration.observe(images.back());
  }
  ActivationScales scales;
  for (const auto& [name, result] : calibration.choose(CalibrationMethod::kMax))
    scales.tensors[name] = result.scale;
  const GraphComparer comparer(graph, images, fast_backend(), 1);
  const OutputError all_fp8 = comparer.compare(fp8_graph(graph, candidates, scales, true, Precision::kF32));
  const OutputError none = comparer.compare(fp8_graph(graph, {}, scales, true, Precision::kF32));
  ASSERT_GT(all_fp8.logit_error, 1e-3) << "FP8 everywhere should cost something";
  EXPECT_LT(none.logit_error, 1e-5) << "no FP8 layer and fp32 elsewhere is the fp32 graph";

  AutoSearchInput input{&graph, candidates, &scales, true, Precision::kF32, {}};
  input.target = parse_auto_target("logit-error=1e9");
  const AutoSearchResult loose = search_auto_recipe(input, comparer);
  EXPECT_EQ(loose.kept, 0u);
  EXPECT_EQ(loose.fp8_layers, candidates);
  EXPECT_EQ(loose.sensitivity.size(), candidates.size());
  for (std::size_t i = 1; i < loose.sensitivity.size(); ++i) {
    EXPECT_GE(loose.sensitivity[i - 1].error.logit_error, loose.sensitivity[i].error.logit_error);
  }

  input.target.value = all_fp8.logit_error / 3.0;
  const AutoSearchResult found = search_auto_recipe(input, comparer);
  EXPECT_GT(found.kept, 0u);
  EXPECT_EQ(found.fp8_layers.size(), candidates.size() - found.kept);
  bool met = false, below_fails = found.kept == 0;
  for (const auto& point : found.curve) {
    if (point.kept == found.kept) met = point.meets && point.error.logit_error <= input.target.value;
    if (point.kept + 1 == found.kept) below_fails = !point.meets;
  }
  EXPECT_TRUE(met) << "the chosen count meets the target on the curve";
  EXPECT_TRUE(below_fails) << "one fewer layer kept misses it: the bracket was narrowed to adjacent counts";
  // The layers kept out of FP8 are the most sensitive ones.
  for (std::size_t rank = 0; rank < found.kept; ++rank) {
    const std::string& kept = found.sensitivity[rank].layer;
    EXPECT_EQ(std::count(found.fp8_layers.begin(), found.fp8_layers.end(), kept), 0) << kept;
  }

  // With fp16 around, even no FP8 layer has some error: a zero target cannot be met.
  input.fallback = Precision::kF16;
  input.target = parse_auto_target("logit-error=0");
  EXPECT_NE(
      error_of([&] { search_auto_recipe(input, comparer); }).find("is not met even with every convolution"),
      std::string::npos);
}

TEST(Fp8Simulation, AutoTargets) {
  EXPECT_EQ(parse_auto_target("agreement=0.99").metric, AutoTarget::Metric::kAgreement);
  EXPECT_DOUBLE_EQ(parse_auto_target("logit-error=0.05").value, 0.05);
  EXPECT_NE(error_of([] { parse_auto_target("agreement=2"); }).find("fraction"), std::string::npos);
  EXPECT_NE(error_of([] { parse_auto_target("top1=0.9"); }).find("expected agreement="), std::string::npos);
  EXPECT_NE(error_of([] { parse_auto_target("logit-error=abc"); }).find("not a non-negative number"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
