// Study reports: tables that render, charts that are SVG, a spec read strictly from the manifest.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "manifest/manifest.h"
#include "study/environment.h"
#include "study/markdown_table.h"
#include "study/study_runner.h"
#include "study/study_spec.h"
#include "study/svg_chart.h"
#include "tests/study/markdown_tables.h"

namespace kiln {
namespace {

TEST(MarkdownTable, EscapesCellsAndKeepsRowsAligned) {
  MarkdownTable table({{"name"}, {"value", MarkdownTable::Align::kRight}});
  table.add_row({"a|b", "1"});
  table.add_row({"two\nlines", ""});
  EXPECT_THROW(table.add_row({"only one"}), Error);
  std::vector<std::string> errors;
  const auto tables = testing::parse_tables(table.str(), errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].header, (std::vector<std::string>{"name", "value"}));
  ASSERT_EQ(tables[0].rows.size(), 2u);
  EXPECT_EQ(tables[0].rows[0][0], "a\\|b");
  EXPECT_EQ(tables[0].rows[1][0], "two lines");
  EXPECT_NE(table.str().find("| ---: |"), std::string::npos);
}

TEST(MarkdownTable, TheCheckerCatchesBrokenTables) {
  std::vector<std::string> errors;
  testing::parse_tables("| a | b |\n| --- |\n| 1 | 2 |\n", errors);
  EXPECT_FALSE(errors.empty());
  errors.clear();
  testing::parse_tables("| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n", errors);
  EXPECT_FALSE(errors.empty());
  errors.clear();
  testing::parse_tables("```\n| not | a table\n```\n", errors);
  EXPECT_TRUE(errors.empty());
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(SvgChart, TicksAreOneTwoFiveStepsCoveringTheRange) {
  EXPECT_EQ(nice_ticks(0.0, 10.0), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0.0, 0.9), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  const std::vector<double> ticks = nice_ticks(83.1, 100.0);
  EXPECT_LE(ticks.front(), 83.1);
  EXPECT_GE(ticks.back(), 100.0);
  EXPECT_GE(ticks.size(), 3u);
  for (std::size_t i = 1; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i] - ticks[i - 1], 5.0, 1e-9);
  EXPECT_GE(nice_ticks(2.0, 2.0).size(), 2u) << "a single value still gets an extent";
}

TEST(SvgChart, BarsHaveAxisTitleTicksLegendThresholdAndCaption) {
  BarChart chart;
  chart.title = "latency <ms>";
  chart.axis.title = "latency per batch (ms)";
  chart.bars = {{"fp16", 1.0, 0.9, 1.1}, {"fp8 & co", 2.5, 2.5, 2.5}};
  chart.lines = {{"ship threshold", 0.95}};
  chart.bar_meaning = "median";
  chart.whisker_meaning = "min .. max of the rounds";
  chart.caption = "Whiskers: the spread over the rounds.";
  chart.demo = true;
  const std::string svg = svg_bar_chart(chart);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("latency &lt;ms&gt;"), std::string::npos);
  EXPECT_NE(svg.find("fp8 &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("latency per batch (ms)"), std::string::npos);
  for (const char* tick : {">0<", ">0.5<", ">1<", ">1.5<", ">2<", ">2.5<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_NE(svg.find("ship threshold"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("min .. max of the rounds"), std::string::npos);
  EXPECT_NE(svg.find("Whiskers: the spread"), std::string::npos);
  EXPECT_NE(svg.find("DEMO"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  chart.demo = false;
  EXPECT_EQ(svg_bar_chart(chart).find("DEMO"), std::string::npos);
  chart.bars.clear();
  EXPECT_THROW(svg_bar_chart(chart), Error);
}

TEST(SvgChart, ScatterHasErrorBarsThresholdsAndNeverPassesItsCeiling) {
  ScatterChart chart;
  chart.title = "accuracy";
  chart.x_axis.title = "speed-up (x)";
  chart.y_axis.title = "top-1 (%)";
  chart.y_axis.ceiling = 100.0;
  chart.series = {
      {"agreement", {{"fp16", 1.0, 0.9, 1.1, 100.0, 90.0, 100.0}, {"fp8", 0.5, 0.4, 0.6, 95.0, 85.0, 99.0}}}};
  chart.x_lines = {{"speed-up threshold", 1.05}};
  chart.y_lines = {{"agreement threshold", 99.0}};
  chart.caption = "Error bars: 95% Wilson intervals.";
  const std::string svg = svg_scatter(chart);
  EXPECT_EQ(count(svg, "<circle"), 3u) << "two points and the legend's marker";
  EXPECT_GE(count(svg, "<path"), 4u) << "error bars in both directions";
  EXPECT_NE(svg.find(">100<"), std::string::npos);
  EXPECT_EQ(svg.find(">105<"), std::string::npos) << "the agreement axis stops at 100%";
  EXPECT_EQ(svg.find(">110<"), std::string::npos);
  EXPECT_NE(svg.find("speed-up threshold"), std::string::npos);
  EXPECT_NE(svg.find("agreement threshold"), std::string::npos);
  EXPECT_NE(svg.find("95% Wilson"), std::string::npos);
  chart.series = {{"empty", {}}};
  EXPECT_THROW(svg_scatter(chart), Error);
}

Manifest manifest_with_study(const std::string& study) {
  return parse_manifest(R"([model]
family = "timm_resnest"
hub_id = "timm/resnest50d.in1k"
revision = "main"
task = "classification"
[input]
size = 224
batch = [1, 32]
[build]
precision = "fp16"
opt_level = 3
[study]
)" + study,
                        "families/timm_resnest/manifest.toml");
}

TEST(StudySpec, ReadsTheManifestStrictly) {
  const StudySpec defaults = study_spec_from_manifest(manifest_with_study(""));
  EXPECT_EQ(defaults.variants.size(), 7u);
  EXPECT_EQ(defaults.baseline, "fp16");
  EXPECT_EQ(defaults.batch, 1);
  const StudySpec spec =
      study_spec_from_manifest(manifest_with_study("variants = [\"fp16\", \"fp8 nose-L1 entropy\"]\nrounds = "
                                                   "3\ndemo_data = \"../../tests/data/photos\"\n"));
  ASSERT_EQ(spec.variants.size(), 2u);
  EXPECT_EQ(spec.variants[1].precision, Precision::kF8);
  EXPECT_EQ(spec.variants[1].recipe, "nose-L1");
  EXPECT_EQ(spec.variants[1].method, CalibrationMethod::kEntropy);
  EXPECT_EQ(spec.rounds, 3);
  EXPECT_EQ(spec.demo_data->string(), "tests/data/photos");
  const auto error = [](const std::string& study) {
    try {
      study_spec_from_manifest(manifest_with_study(study));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("variants = [\"fp8 all\"]").find("study.variants"), std::string::npos);
  EXPECT_NE(error("variants = [\"fp8 all kl\"]").find("calibrator 'kl'"), std::string::npos);
  EXPECT_NE(error("variants = [\"fp32\"]").find("study.baseline"), std::string::npos);
  EXPECT_NE(error("rounds = \"five\"").find("study.rounds: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error("colour = 1").find("study.colour: unknown key"), std::string::npos);
  EXPECT_NE(error("batches = [0]").find("study.batches: expected a non-empty array"), std::string::npos);
  EXPECT_NE(error("opt_levels = [9]").find("study.opt_levels"), std::string::npos);
  EXPECT_NE(error("parts = \"\"").find("study.parts: expected a non-empty string"), std::string::npos);
  EXPECT_NE(error("revisit = [1]").find("study.revisit"), std::string::npos);
  EXPECT_NE(error("[study.recipes]\nnosee = \"x\"").find("study.recipes: nosee"), std::string::npos);
}

// A variant listed twice would be built, evaluated and timed twice; a list past the bound is a mistake.
TEST(StudySpec, VariantsAreDistinctAndBounded) {
  const auto error = [](const std::string& study) {
    try {
      study_spec_from_manifest(manifest_with_study(study));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("variants = [\"fp16\", \"fp32\", \"fp16\"]"),
            "families/timm_resnest/manifest.toml: study.variants: 'fp16' is given twice");
  EXPECT_EQ(error("variants = [\"fp16\", \"fp8 nose max\", \"fp8  nose   max\"]"),
            "families/timm_resnest/manifest.toml: study.variants: 'fp8 nose max' and 'fp8  nose   max' are "
            "the same variant");
  std::string many = "variants = [\"fp16\"";
  for (std::size_t i = 1; i <= kMaxStudyVariants; ++i)
    many += ", \"fp8 include=layer" + std::to_string(i) + ".* max\"";
  EXPECT_EQ(error(many + "]"),
            "families/timm_resnest/manifest.toml: study.variants: 33 variants, more than a "
            "study runs (32 at most)");
  // An int8 variant's depthwise inputs: per channel unless it says otherwise.
  EXPECT_EQ(error("variants = [\"fp16\", \"int8 all max\", \"int8 all max depthwise=per-channel\"]"),
            "families/timm_resnest/manifest.toml: study.variants: 'int8 all max' and 'int8 all max "
            "depthwise=per-channel' are the same variant");
  EXPECT_EQ(error("variants = [\"fp16\", \"int8 all max\", \"int8 all max depthwise=per-tensor\"]"), "no error");
  // Another calibrator or recipe is another variant.
  EXPECT_EQ(error("variants = [\"fp16\", \"fp8 nose max\", \"fp8 nose entropy\", \"fp8 all max\"]"),
            "no error");
}

TEST(StudySpec, Int8VariantsChooseTheirDepthwiseInputScales) {
  EXPECT_EQ(parse_study_variant("int8 all max").depthwise_input_scales, DepthwiseInputScales::kPerChannel);
  EXPECT_EQ(parse_study_variant("int8 all mse depthwise=per-tensor").depthwise_input_scales,
            DepthwiseInputScales::kPerTensor);
  const auto message = [](const std::string& text) {
    try {
      parse_study_variant(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("int8 all max depthwise=per-pixel"),
            "study variant 'int8 all max depthwise=per-pixel': 'depthwise=per-pixel' is not depthwise=per-channel "
            "or depthwise=per-tensor");
  // Only int8 quantizes activations per channel.
  EXPECT_NE(message("fp8 all max depthwise=per-tensor").find("expected fp32, fp16, bf16"), std::string::npos);
}

TEST(StudySpec, SpeedMatrixDefaultsToTheManifestsBatchesAndTwoLevels) {
  const StudySpec defaults = study_spec_from_manifest(manifest_with_study(""));
  EXPECT_EQ(defaults.batches, (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(defaults.opt_levels, (std::vector<std::int64_t>{3, 1}));
  const StudySpec spec = study_spec_from_manifest(
      manifest_with_study("batches = [8, 8, 1]\nopt_levels = [2]\nmatrix_seconds = 0.1\n"));
  EXPECT_EQ(spec.batches, (std::vector<std::int64_t>{8, 1})) << "each batch once";
  EXPECT_EQ(spec.opt_levels, (std::vector<std::int64_t>{2}));
  EXPECT_DOUBLE_EQ(spec.matrix_seconds, 0.1);
}

TEST(StudySpec, ReadsTheFamilysWords) {
  const StudySpec spec = study_spec_from_manifest(manifest_with_study(
      "parts = \"a stem and four stages\"\nother_layers = \"pooling\"\nrevisit = [\"when X\"]\n"
      "not_tried = [\"Y\"]\n[study.recipes]\nall = \"every convolution\"\n\"exclude=*.fc1\" = \"no "
      "gates\"\n"));
  EXPECT_EQ(spec.text.parts, "a stem and four stages");
  EXPECT_EQ(spec.text.other_layers, "pooling");
  EXPECT_EQ(spec.text.revisit, (std::vector<std::string>{"when X"}));
  EXPECT_EQ(spec.text.not_tried, (std::vector<std::string>{"Y"}));
  EXPECT_EQ(spec.text.recipes.at("all"), "every convolution");
  EXPECT_EQ(spec.text.recipes.at("exclude=*.fc1"), "no gates");
}

TEST(Environment, NamesTheCpusVectorExtensions) {
  EXPECT_EQ(cpu_isa_from_flags("fpu sse2 avx2 avx_vnni avx512f avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 "
                               "amx_int8"),
            "AVX2, AVX-VNNI, AVX-512, AVX512-VNNI, AVX512-BF16, AVX512-FP16, AMX (bf16, int8)");
  EXPECT_EQ(cpu_isa_from_flags("fpu sse2 avx2 avx512f avx512_vnni avx512_bf16"),
            "AVX2, AVX-512, AVX512-VNNI, AVX512-BF16; no AVX-VNNI, AVX512-FP16, AMX");
  EXPECT_EQ(cpu_isa_from_flags("fpu sse2 avx2"),
            "AVX2; no AVX-VNNI, AVX-512, AVX512-VNNI, AVX512-BF16, AVX512-FP16, AMX");
  EXPECT_EQ(cpu_isa_from_flags("fp asimd"),
            "none of AVX2, AVX-VNNI, AVX-512, AVX512-VNNI, AVX512-BF16, AVX512-FP16, AMX");
  EXPECT_NE(cpu_isa_from_flags("").find("unknown"), std::string::npos);
}

TEST(Environment, HasEveryRequiredFactWhateverTheBuild) {
  const Environment env = capture_environment();
  for (const auto& [key, label] : required_backend_facts()) {
    const auto fact = std::find_if(env.backend_facts.begin(), env.backend_facts.end(),
                                   [&](const BackendFact& f) { return f.key == key; });
    ASSERT_NE(fact, env.backend_facts.end()) << key;
    EXPECT_EQ(fact->label, label);
    EXPECT_FALSE(fact->value.empty()) << key;
    EXPECT_TRUE(env.to_json().contains(key)) << key;
  }
  EXPECT_FALSE(env.cpu_isa.empty());
}

TEST(StudyVariantList, APatternRecipeKeepsItsCommas) {
  EXPECT_EQ(split_study_variants("fp32,fp16,fp8 exclude=*.conv_dw,*.se.* max, fp8 all max"),
            (std::vector<std::string>{"fp32", "fp16", "fp8 exclude=*.conv_dw,*.se.* max", " fp8 all max"}));
  EXPECT_EQ(split_study_variants("fp8 include=layer1.*,layer2.* entropy"),
            (std::vector<std::string>{"fp8 include=layer1.*,layer2.* entropy"}));
  const StudyVariant parsed = parse_study_variant(split_study_variants("fp16,fp8 exclude=a,b max").at(1));
  EXPECT_EQ(parsed.recipe, "exclude=a,b");
  // A comma that starts no variant stays in the text, which then names no variant: refused by name.
  EXPECT_THROW(parse_study_variant(split_study_variants("fp16,").at(0)), Error);
}

// File systems take 255 bytes per name; a recipe naming dozens of layers made a longer plan file name.
TEST(StudyVariantList, ALongVariantNameGetsAShortDistinctPlanFile) {
  EXPECT_EQ(variant_plan_path("out", "fp8 all max"), std::filesystem::path("out/plans/fp8_all_max.kplan"));
  std::string layers;
  for (int block = 0; block < 20; ++block) {
    if (block > 0) layers += ',';
    layers += cat("blocks.", block, ".se.*");
  }
  const std::string first = "fp8 exclude=" + layers + " max", second = "fp8 exclude=" + layers + " entropy";
  const std::filesystem::path a = variant_plan_path("out", first), b = variant_plan_path("out", second);
  EXPECT_LE(a.filename().string().size(), 120u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.filename().string().rfind("fp8_exclude_blocks_0_se__", 0), 0u) << a;
  EXPECT_EQ(a.extension(), ".kplan");
}

}  // namespace
}  // namespace kiln
