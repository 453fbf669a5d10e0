// The precision tactic (builder/precision_tactic.h): which FP8 layers stay fp16, from the times two
// compiles stored, and on the GPU an FP8 build that applies it end to end.
#include "builder/precision_tactic.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "../backends/cuda_test_util.h"
#include "builder/build_plan.h"
#include "eval/metrics.h"
#include "quant/fp8_build.h"
#include "runtime/engine.h"
#include "testing/random_tensor.h"
#include "testing/resnest_like_graph.h"

namespace kiln {
namespace {

nlohmann::json timed(double us) { return {{"tactic", {{"api", "graph"}, {"us", us}}}}; }

TEST(PrecisionTactic, KeepsFp16WhereItTimedFasterAndTiesStayFp8) {
  const std::map<std::string, nlohmann::json> fp8 = {
      {"a", timed(10.0)}, {"b", timed(4.0)}, {"c", timed(5.0)}};
  const std::map<std::string, nlohmann::json> fp16 = {
      {"a", timed(6.0)}, {"b", timed(8.0)}, {"c", timed(5.0)}};
  const PrecisionChoice choice = choose_layer_precisions({"a", "b", "c"}, fp8, fp16);
  ASSERT_EQ(choice.kept_fp16.size(), 1u);
  EXPECT_EQ(choice.kept_fp16[0].layer, "a");
  EXPECT_DOUBLE_EQ(choice.kept_fp16[0].fp8_us, 10.0);
  EXPECT_DOUBLE_EQ(choice.kept_fp16[0].fp16_us, 6.0);
  EXPECT_EQ(choice.fp8_layers, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(choice.kept_fp8.size(), 2u);
  const nlohmann::json j = choice.to_json();
  EXPECT_EQ(j.at("compared"), 3);
  EXPECT_EQ(j.at("kept_fp16")[0].at("layer"), "a");
}

TEST(PrecisionTactic, LayersWithoutBothTimesStayFp8) {
  // "b" has no fp16 entry (fused into another step there); "c" was chosen without timing (0 us).
  const std::map<std::string, nlohmann::json> fp8 = {{"a", timed(9.0)}, {"b", timed(9.0)}, {"c", timed(0.0)}};
  const std::map<std::string, nlohmann::json> fp16 = {{"a", timed(1.0)}, {"c", timed(1.0)}};
  const PrecisionChoice choice = choose_layer_precisions({"a", "b", "c"}, fp8, fp16);
  EXPECT_EQ(choice.fp8_layers, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(choice.untimed, (std::vector<std::string>{"b", "c"}));
  ASSERT_EQ(choice.kept_fp16.size(), 1u);
}

TEST(PrecisionTactic, ReadsOnlyATimedTactic) {
  EXPECT_EQ(timed_microseconds(timed(3.5)), 3.5);
  EXPECT_FALSE(timed_microseconds(timed(0.0)));
  EXPECT_FALSE(timed_microseconds(nlohmann::json::object()));
  EXPECT_FALSE(timed_microseconds({{"tactic", {{"us", "fast"}}}}));
  EXPECT_FALSE(timed_microseconds(nlohmann::json::array()));
}

// A small ResNeSt, its convolutions but the stem's in FP8 by the `all` recipe.
struct Fp8Build {
  BuildInput input;
  BuildOptions options;
  std::shared_ptr<CalibrationImages> images = std::make_shared<CalibrationImages>();
};

Fp8Build small_fp8_build(const std::string& backend, std::int64_t batch) {
  testing::ResnestLikeOptions o;
  std::tie(o.image, o.stem_width, o.base_width, o.classes) = std::make_tuple(64, 16, 32, 10);
  o.depths = {1, 1, 1, 1};
  Fp8Build b;
  b.input.graph = testing::resnest_like_graph(o);
  b.input.family = "timm_resnest";
  for (std::uint32_t seed = 1; seed <= 4; ++seed)
    b.images->images.push_back(testing::random_tensor({1, 3, 64, 64}, seed));
  Fp8Settings settings;
  settings.recipe = "all";
  b.options.precision = Precision::kF8;
  b.options.backend = backend;
  b.options.batch = batch;
  b.options.quantizer = fp8_quantizer(settings, b.images);
  return b;
}

std::set<std::string> nodes_in(const Graph& graph, Precision precision, OpKind op) {
  std::set<std::string> names;
  for (const Node& node : graph.nodes())
    if (node.op == op && node.precision == precision) names.insert(node.name);
  return names;
}

TEST(PrecisionTactic, BackendsThatTimeNothingKeepTheRecipe) {
  Fp8Build b = small_fp8_build("cpu-reference", 1);
  const BuildResult result = build_plan(std::move(b.input), b.options);
  EXPECT_FALSE(result.plan.info.quantization.contains("precision_tactic"));
  EXPECT_GT(result.plan.info.quantization.at("fp8_layers").get<int>(), 0);
}

// The rebuild's quantization: exactly the fixed layers in FP8, on the first calibration's scales, with no
// image calibrated again.
TEST(PrecisionTactic, TheRebuildQuantizesExactlyTheFixedLayers) {
  Fp8Build b = small_fp8_build("cpu-reference", 1);
  Graph first = b.input.graph;
  run_passes(first, PassOptions{});
  Graph second = first;
  const nlohmann::json report = b.options.quantizer(first, nullptr);
  std::vector<std::string> layers;
  for (const nlohmann::json& layer : report.at("layers"))
    layers.push_back(layer.at("layer").get<std::string>());
  ASSERT_GT(layers.size(), 2u);
  FixedFp8Layers fixed{{layers.begin() + 1, layers.end() - 1}, {}};
  for (const auto& [tensor, scale] : report.at("calibration_cache").at("scales").items())
    fixed.scales[tensor] = scale.get<float>();
  b.images->images.clear();  // nothing to calibrate on: the rebuild must not need it
  const nlohmann::json rebuilt = b.options.quantizer(second, &fixed);
  EXPECT_EQ(rebuilt.at("fp8_layers").get<std::size_t>(), layers.size() - 2);
  EXPECT_EQ(rebuilt.at("layers")[0].at("layer"), layers[1]);
  EXPECT_EQ(rebuilt.at("layers")[0].at("input_scale"), report.at("layers")[1].at("input_scale"));
  FixedFp8Layers none{{}, fixed.scales};
  Graph third = b.input.graph;
  run_passes(third, PassOptions{});
  EXPECT_EQ(b.options.quantizer(third, &none).at("fp8_layers"), 0);
}

// On the GPU: every layer the tactic kept fp16 is an fp16 convolution of the plan, every other recipe
// layer is FP8, and the engine computes what cpu-reference computes from the same plan.
TEST(PrecisionTacticGpu, KeptLayersAreFp16InThePlanAndTheEngineMatchesTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  Fp8Build strict = small_fp8_build("cuda", 8);
  strict.options.strict_precision = true;
  const BuildResult all_fp8 = build_plan(strict.input, strict.options);
  EXPECT_FALSE(all_fp8.plan.info.quantization.contains("precision_tactic"));
  Fp8Build b = small_fp8_build("cuda", 8);
  const BuildResult result = build_plan(std::move(b.input), b.options);
  const nlohmann::json& q = result.plan.info.quantization;
  ASSERT_TRUE(q.contains("precision_tactic")) << q.dump();
  const nlohmann::json& tactic = q.at("precision_tactic");
  EXPECT_GT(tactic.at("compared").get<int>(), 0);
  const std::set<std::string> fp8 = nodes_in(result.plan.graph, Precision::kF8, OpKind::kConv2d);
  const std::size_t kept = tactic.at("kept_fp16").size();
  EXPECT_EQ(fp8.size() + kept,
            static_cast<std::size_t>(all_fp8.plan.info.quantization.at("fp8_layers").get<int>()));
  EXPECT_EQ(q.at("fp8_layers").get<std::size_t>(), fp8.size());
  for (const nlohmann::json& layer : tactic.at("kept_fp16")) {
    EXPECT_FALSE(fp8.contains(layer.at("layer").get<std::string>()));
    EXPECT_LT(layer.at("fp16_us").get<double>(), layer.at("fp8_us").get<double>());
  }
  for (const nlohmann::json& layer : tactic.at("kept_fp8"))
    EXPECT_TRUE(fp8.contains(layer.at("layer").get<std::string>()));

  const auto plan = std::make_shared<const Plan>(result.plan);
  CompileOptions compile;
  compile.batch = 8;
  Engine gpu(plan, "cuda", compile);
  Engine reference(plan, "cpu-reference", compile);
  const Tensor x = testing::random_tensor({8, 3, 64, 64}, 99);
  const Tensor y = gpu.run(x).at(0), ref = reference.run(x).at(0);
  // fp16 storage between layers and E4M3 rounding on the reference's own grid: the FP8 op tests bound
  // single layers at 2e-2; a network of 17 layers stays within 5e-2 of the same plan's reference.
  EXPECT_LT(relative_l2_error(y.f32(), ref.f32()), 5e-2);
}

}  // namespace
}  // namespace kiln
