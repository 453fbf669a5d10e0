// The precision tactic (builder/precision_tactic.h): which FP8 layers stay fp16, from the times two
// compiles stored, and on the GPU an FP8 build that applies it end to end.
#include "builder/precision_tactic.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "../backends/cuda_test_util.h"
#include "builder/build_plan.h"
#include "builder/fp8_refusals.h"
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

// A fp16 producer "p" writes codes for its FP8 readers "a" and "b" (10 us more than in the fp16 compile);
// they save 3 + 4 us: not enough, both go back. "q" costs 1 us more for "c", which saves 5: it stays.
// "d"'s producer is the FP8 layer "c" (its codes were timed in the FP8 compile); "e"'s producer has no
// fp16 time.
TEST(PrecisionTactic, ReadersGoBackWhereTheirProducersCodesCostMoreThanTheySave) {
  const std::vector<std::string> fp8 = {"a", "b", "c", "d", "e"};
  const std::map<std::string, std::string> producer_of = {
      {"a", "p"}, {"b", "p"}, {"c", "q"}, {"d", "c"}, {"e", "r"}};
  const std::map<std::string, nlohmann::json> mixed = {
      {"p", timed(30.0)}, {"q", timed(11.0)}, {"r", timed(50.0)}, {"a", timed(7.0)}, {"b", timed(6.0)},
      {"c", timed(5.0)}, {"d", timed(1.0)}, {"e", timed(1.0)}};
  const std::map<std::string, nlohmann::json> fp16 = {
      {"p", timed(20.0)}, {"q", timed(10.0)}, {"a", timed(10.0)}, {"b", timed(10.0)},
      {"c", timed(10.0)}, {"d", timed(9.0)}, {"e", timed(9.0)}};
  const std::vector<CodesCharge> unpaid = unpaid_codes(fp8, producer_of, mixed, fp16);
  ASSERT_EQ(unpaid.size(), 1u);
  EXPECT_EQ(unpaid[0].producer, "p");
  EXPECT_EQ(unpaid[0].readers, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(unpaid[0].extra_us, 10.0);
  EXPECT_DOUBLE_EQ(unpaid[0].saved_us, 7.0);
  const nlohmann::json j = codes_charges_json(unpaid);
  EXPECT_EQ(j[0].at("producer"), "p");
  EXPECT_EQ(j[0].at("readers_save_us"), 7.0);
  // Saving exactly what the codes cost keeps the readers FP8, as a tie does for a layer.
  std::map<std::string, nlohmann::json> even = mixed;
  even["p"] = timed(27.0);
  EXPECT_TRUE(unpaid_codes(fp8, producer_of, even, fp16).empty());
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

Fp8Build small_fp8_build(const std::string& backend, std::int64_t batch, std::int64_t base_width = 32,
                         QuantFormat format = QuantFormat::kE4M3) {
  testing::ResnestLikeOptions o;
  std::tie(o.image, o.stem_width, o.base_width, o.classes) = std::make_tuple(64, 16, base_width, 10);
  o.depths = {1, 1, 1, 1};
  Fp8Build b;
  b.input.graph = testing::resnest_like_graph(o);
  b.input.family = "timm_resnest";
  for (std::uint32_t seed = 1; seed <= 4; ++seed)
    b.images->images.push_back(testing::random_tensor({1, 3, 64, 64}, seed));
  Fp8Settings settings;
  settings.recipe = "all";
  settings.format = format;
  b.options.precision = format == QuantFormat::kInt8 ? Precision::kI8 : Precision::kF8;
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

// Stages 24 channels wide: cuDNN's FP8 convolutions need multiples of 16 channels, so the cuda backend
// refuses exactly the FP8 convolutions whose weights have another channel count (counted here from the
// weights, not by the backend's rule), and runs all of them unquantized.
TEST(Fp8Refusals, ListsTheRecipeLayersCudaCannotRunInFp8) {
  if (!testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  Fp8Build b = small_fp8_build("cpu-reference", 1, 24);
  Graph quantized = b.input.graph;
  run_passes(quantized, PassOptions{});
  const Graph unquantized = quantized;
  const nlohmann::json report = b.options.quantizer(quantized, nullptr);
  const std::vector<Fp8Refusal> refused =
      fp8_layers_refused(quantized, unquantized, report, *make_backend("cuda"));
  std::set<std::string> names, narrow;
  for (const Fp8Refusal& r : refused) {
    names.insert(r.layer);
    EXPECT_NE(r.reason.find("multiples of 16"), std::string::npos) << r.reason;
  }
  for (const nlohmann::json& entry : report.at("layers")) {
    const std::string layer = entry.at("layer").get<std::string>();
    const Node& conv = unquantized.node(*unquantized.find_node(layer));
    const Shape& w = unquantized.value(conv.inputs[1]).shape;  // [out, in / groups, kh, kw]
    if (w[0] % 16 != 0 || (w[1] * conv.attr<ConvAttrs>().groups) % 16 != 0) narrow.insert(layer);
  }
  EXPECT_FALSE(narrow.empty());
  EXPECT_LT(narrow.size(), report.at("layers").size());
  EXPECT_EQ(names, narrow);
  EXPECT_TRUE(fp8_layers_refused(quantized, unquantized, report, *make_backend("cpu-reference")).empty());
  const nlohmann::json json = refusals_json(refused);
  ASSERT_EQ(json.size(), refused.size());
  EXPECT_EQ(json[0].at("layer"), refused[0].layer);
}

// Without a GPU a strict-precision build stops at the refusal, before any device is needed.
TEST(Fp8Refusals, StrictPrecisionRefusesTheBuildNamingTheLayer) {
  if (!testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  Fp8Build b = small_fp8_build("cuda", 1, 24);
  b.options.strict_precision = true;
  try {
    build_plan(std::move(b.input), b.options);
    FAIL() << "a strict-precision build kept a layer cuda has no FP8 kernel for";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot be FP8 on the cuda backend (cuDNN's FP8 convolutions"),
              std::string::npos)
        << error.what();
  }
}

// On the GPU: the refused layers are fp16 convolutions of the plan, nothing runs on the CPU fallback (so a
// strict-backend build passes), and the engine computes what cpu-reference computes from the same plan.
TEST(Fp8RefusalsGpu, RefusedLayersStayFp16OnCuda) {
  KILN_SKIP_WITHOUT_GPU();
  Fp8Build b = small_fp8_build("cuda", 4, 24);
  b.options.strict_backend = true;
  const BuildResult result = build_plan(std::move(b.input), b.options);
  EXPECT_TRUE(result.fallback_layers.empty());
  const nlohmann::json& q = result.plan.info.quantization;
  ASSERT_TRUE(q.contains("kept_fp16_unsupported")) << q.dump();
  const std::set<std::string> fp16 = nodes_in(result.plan.graph, Precision::kF16, OpKind::kConv2d);
  const std::set<std::string> fp8 = nodes_in(result.plan.graph, Precision::kF8, OpKind::kConv2d);
  EXPECT_FALSE(q.at("kept_fp16_unsupported").empty());
  for (const nlohmann::json& layer : q.at("kept_fp16_unsupported"))
    EXPECT_TRUE(fp16.contains(layer.at("layer").get<std::string>())) << layer.dump();
  EXPECT_FALSE(fp8.empty());
  const auto plan = std::make_shared<const Plan>(result.plan);
  CompileOptions compile;
  compile.batch = 4;
  compile.strict_backend = true;
  Engine gpu(plan, "cuda", compile);
  Engine reference(plan, "cpu-reference", compile);
  const Tensor x = testing::random_tensor({4, 3, 64, 64}, 7);
  // The bound of the test below: fp16 storage and E4M3 rounding over a 17-layer network.
  EXPECT_LT(relative_l2_error(gpu.run(x).at(0).f32(), reference.run(x).at(0).f32()), 5e-2);
}

// The readers the precision tactic put back to fp16 for their producer's codes (codes_charged).
std::set<std::string> charged_readers(const nlohmann::json& tactic) {
  std::set<std::string> readers;
  for (const nlohmann::json& charge : tactic.at("codes_charged"))
    for (const nlohmann::json& reader : charge.at("readers")) readers.insert(reader.get<std::string>());
  return readers;
}

// What the precision tactic left in a plan whose recipe chose `recipe_layers` layers: every layer it kept
// fp16 timed faster there, every layer it kept quantized is so in the plan unless its producer's codes
// were charged, and the plan's quantized convolutions are exactly the rest (besides the layers the
// backend has no such kernel for). Then the engine computes what
// cpu-reference computes from the same plan: fp16 storage between layers and rounding on the reference's
// own grid (E4M3's or int8's, which is finer); the FP8 op tests bound single layers at 2e-2, and a network
// of 17 layers stays within 5e-2 of the same plan's reference.
void expect_tactic_applied(const BuildResult& result, Precision quantized, std::size_t recipe_layers) {
  const nlohmann::json& q = result.plan.info.quantization;
  ASSERT_TRUE(q.contains("precision_tactic")) << q.dump();
  const nlohmann::json& tactic = q.at("precision_tactic");
  EXPECT_GT(tactic.at("compared").get<int>(), 0);
  const std::set<std::string> in_plan = nodes_in(result.plan.graph, quantized, OpKind::kConv2d);
  const std::set<std::string> charged = charged_readers(tactic);
  const std::size_t kept = tactic.at("kept_fp16").size();
  const std::size_t unsupported = q.value("kept_fp16_unsupported", nlohmann::json::array()).size();
  EXPECT_EQ(in_plan.size() + kept + charged.size() + unsupported, recipe_layers) << q.dump();
  EXPECT_EQ(q.at("quantized_layers").get<std::size_t>(), in_plan.size());
  for (const nlohmann::json& layer : tactic.at("kept_fp16")) {
    EXPECT_FALSE(in_plan.contains(layer.at("layer").get<std::string>()));
    EXPECT_LT(layer.at("fp16_us").get<double>(), layer.at("fp8_us").get<double>());
  }
  for (const nlohmann::json& layer : tactic.at("kept_fp8")) {
    const std::string name = layer.at("layer").get<std::string>();
    EXPECT_NE(in_plan.contains(name), charged.contains(name)) << name;
  }
  const auto plan = std::make_shared<const Plan>(result.plan);
  CompileOptions compile;
  compile.batch = result.plan.info.batch;
  const Tensor x = testing::random_tensor({compile.batch, 3, 64, 64}, 99);
  const Tensor y = Engine(plan, "cuda", compile).run(x).at(0);
  const Tensor ref = Engine(plan, "cpu-reference", compile).run(x).at(0);
  EXPECT_LT(relative_l2_error(y.f32(), ref.f32()), 5e-2);
}

// On the GPU, an FP8 build against the same build with --strict-precision (every recipe layer FP8).
TEST(PrecisionTacticGpu, KeptLayersAreFp16InThePlanAndTheEngineMatchesTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  Fp8Build strict = small_fp8_build("cuda", 8);
  strict.options.strict_precision = true;
  const BuildResult all_fp8 = build_plan(strict.input, strict.options);
  EXPECT_FALSE(all_fp8.plan.info.quantization.contains("precision_tactic"));
  Fp8Build b = small_fp8_build("cuda", 8);
  expect_tactic_applied(build_plan(std::move(b.input), b.options), Precision::kF8,
                        all_fp8.plan.info.quantization.at("fp8_layers").get<std::size_t>());
}

// An int8 build is judged the same way (kiln's Hopper kernel against the fp16 convolutions).
TEST(PrecisionTacticGpu, Int8BuildsKeepFp16WhereItTimedFaster) {
  KILN_SKIP_WITHOUT_GPU();
  if (!make_backend("cuda")->precision_refusal(Precision::kI8).empty()) GTEST_SKIP() << "int8 needs Hopper";
  // cuda has no int8 kernel for the grouped convolutions, so the recipe's layers are counted on the
  // reference, which runs every one in int8.
  Fp8Build simulated = small_fp8_build("cpu-reference", 8, 32, QuantFormat::kInt8);
  const BuildResult all_int8 = build_plan(simulated.input, simulated.options);
  Fp8Build b = small_fp8_build("cuda", 8, 32, QuantFormat::kInt8);
  expect_tactic_applied(build_plan(std::move(b.input), b.options), Precision::kI8,
                        all_int8.plan.info.quantization.at("quantized_layers").get<std::size_t>());
}

}  // namespace
}  // namespace kiln
