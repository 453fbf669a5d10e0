// Study reports: tables that render, charts that are SVG, a spec read strictly from the manifest.
#include <gtest/gtest.h>

#include "core/error.h"
#include "manifest/manifest.h"
#include "study/markdown_table.h"
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

TEST(SvgChart, BarsAndScatterAreSelfContainedSvg) {
  const std::string bars =
      svg_bar_chart("latency <ms>", "ms", {{"fp16", 1.0, 0.9, 1.1}, {"fp8 & co", 2.5, 2.5, 2.5}});
  EXPECT_EQ(bars.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(bars.find("</svg>"), std::string::npos);
  EXPECT_NE(bars.find("latency &lt;ms&gt;"), std::string::npos);
  EXPECT_NE(bars.find("fp8 &amp; co"), std::string::npos);
  EXPECT_EQ(bars.find("<script"), std::string::npos);
  const std::string scatter = svg_scatter("accuracy", "speed-up", "agreement", {{"fp16", 1.0, 100.0}});
  EXPECT_NE(scatter.find("<circle"), std::string::npos);
  EXPECT_THROW(svg_bar_chart("empty", "ms", {}), Error);
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
}

}  // namespace
}  // namespace kiln
