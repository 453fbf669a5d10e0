// `kiln study` end to end on the shipped demo: a finished report whose tables render, whose charts are
// there, and whose accuracy figures come out the same on a second run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "tests/study/markdown_tables.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kFamilies;
using testing::run_kiln;
using testing::Scratch;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A quick study: few variants, one short timing round.
testing::CliResult quick_study(const fs::path& out) {
  return run_kiln("study " + (kFamilies / "timm_resnest").string() +
                  " --variants fp32,fp16,'fp8 all max','fp8 nose-L1 entropy' --rounds 1 --seconds-per-round "
                  "50ms --batches 1,2 -o " +
                  out.string());
}

nlohmann::json accuracy_of(const nlohmann::json& study) {
  nlohmann::json accuracy;
  for (const auto& v : study.at("variants")) {
    accuracy[v.at("name").get<std::string>()] = v.at("eval").at("reference");
  }
  return accuracy;
}

TEST(StudyCli, DemoStudyWritesAReportThatRendersAndRepeats) {
  const Scratch scratch;
  const fs::path first = scratch.dir() / "first", second = scratch.dir() / "second";
  const auto ran = quick_study(first);
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("this is the demo"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("## Summary and decision"), std::string::npos) << ran.output;

  const std::string markdown = read_text(first / "STUDY.md");
  std::vector<std::string> errors;
  const auto tables = testing::parse_tables(markdown, errors);
  for (const std::string& error : errors) ADD_FAILURE() << error;
  EXPECT_GE(tables.size(), 5u) << "recipe, environment, speed, quality and kernel-time tables";
  for (const char* section :
       {"## Summary and decision", "## Recipe", "## Method", "## Environment", "## Results",
        "### Speed and size", "### Quality", "### Kernel time per group", "## When to revisit", "## Re-run",
        "Demo run", "(latency.svg)", "(accuracy_vs_speed.svg)"}) {
    EXPECT_NE(markdown.find(section), std::string::npos) << section;
  }
  for (const char* chart : {"latency.svg", "accuracy_vs_speed.svg"}) {
    const std::string svg = read_text(first / chart);
    EXPECT_EQ(svg.rfind("<svg", 0), 0u) << chart;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << chart;
  }
  std::ifstream json_file(first / "study.json");
  const nlohmann::json study = nlohmann::json::parse(json_file);
  ASSERT_EQ(study.at("variants").size(), 4u);
  EXPECT_TRUE(study.at("demo").get<bool>());
  EXPECT_EQ(study.at("variants")[2].at("fp8_convolutions"), 29);
  EXPECT_TRUE(fs::exists(first / "plans" / "fp8_all_max.kplan"));

  const auto again = quick_study(second);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  std::ifstream second_file(second / "study.json");
  EXPECT_EQ(accuracy_of(nlohmann::json::parse(second_file)), accuracy_of(study))
      << "accuracy must not change";
}

TEST(StudyCli, BadArgumentsAreOneLineErrors) {
  const Scratch scratch;
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --variants fp32"),
      "--variants must include the baseline 'fp16'");
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --variants fp16,'fp8 all'"),
      "study variant 'fp8 all'");
  testing::expect_one_line_error(run_kiln("study " + (kFamilies / "timm_resnest").string() +
                                          " --checkpoint " + (testing::kTiny / "model.safetensors").string()),
                                 "needs --data");
}

}  // namespace
}  // namespace kiln
