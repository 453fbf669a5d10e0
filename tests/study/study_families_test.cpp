// `kiln study` on every family's demo (the classifiers' and the yolov10 detector's): each STUDY.md parses
// (every table's rows as wide as its header), has every environment field, and names only its own
// family's parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "tests/study/markdown_tables.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kFamilies;
using testing::run_kiln;
using testing::Scratch;

// Words that name one family's parts; no other family's report may use them.
const std::map<std::string, std::vector<std::string>> kOwnParts = {
    {"timm_resnest", {"split-attention", "resnest", "radix", "conv2.fc1"}},
    {"timm_resnet", {"resnet-50", "resnet50", "7x7"}},
    {"timm_efficientnet", {"efficientnet", "squeeze-excitation", "depthwise", "conv_dw", "conv_stem"}},
    {"yolov10", {"yolov10", "one2one_cv2", "c2fcib", "scdown", "map@0.5"}},
};

const std::vector<std::string> kEnvironmentFields = {
    "date (UTC)", "CPU",      "CPU ISA",    "load average at start",
    "OS",         "GPU",      "GPU driver", "CUDA runtime",
    "cuDNN",      "cuBLASLt", "oneDNN",     "backend studied",
    "kiln",       "compiler", "family",     "checkpoint",
    "study time"};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A quick study: three variants, one short round, a small speed matrix.
testing::CliResult quick_study(const std::string& family, const fs::path& out) {
  return run_kiln(
      "study " + (kFamilies / family).string() +
      " --variants fp32,fp16,'fp8 all max' --images 8 --rounds 1 --seconds-per-round 20ms --batches 1,2 "
      "--opt-levels 3,1 -o " +
      out.string());
}

void expect_environment_fields(const std::vector<testing::ParsedTable>& tables, const std::string& family) {
  const auto environment = std::find_if(tables.begin(), tables.end(), [](const testing::ParsedTable& t) {
    return t.header == std::vector<std::string>{"item", "value"};
  });
  ASSERT_NE(environment, tables.end()) << family << ": no environment table";
  for (const std::string& field : kEnvironmentFields) {
    const auto row =
        std::find_if(environment->rows.begin(), environment->rows.end(),
                     [&](const std::vector<std::string>& r) { return !r.empty() && r[0] == field; });
    ASSERT_NE(row, environment->rows.end()) << family << ": environment lacks '" << field << "'";
    ASSERT_EQ(row->size(), 2u);
    EXPECT_FALSE((*row)[1].empty()) << family << ": '" << field << "' is empty";
  }
}

void expect_only_own_parts(const std::string& markdown, const std::string& family) {
  const std::string text = lower(markdown);
  for (const auto& [other, words] : kOwnParts) {
    if (other == family) continue;
    for (const std::string& word : words) {
      EXPECT_EQ(text.find(word), std::string::npos)
          << family << "'s report names " << other << "'s '" << word << "'";
    }
  }
}

class StudyFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(StudyFamilies, ReportParsesHasTheEnvironmentAndNamesOnlyItsOwnParts) {
  const std::string family = GetParam();
  const Scratch scratch;
  const fs::path out = scratch.dir() / family;
  const auto ran = quick_study(family, out);
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const std::string markdown = testing::bytes_of(out / "STUDY.md");

  std::vector<std::string> errors;
  const auto tables = testing::parse_tables(markdown, errors);
  for (const std::string& error : errors) ADD_FAILURE() << family << ": " << error;
  EXPECT_GE(tables.size(), 7u) << "recipe, environment, speed, quality, kernel time, levels, matrix";
  expect_environment_fields(tables, family);

  expect_only_own_parts(markdown, family);
  for (const char* section : {"## What was not tried", "## When to revisit", "### Speed at other batches"}) {
    EXPECT_NE(markdown.find(section), std::string::npos) << family << ": " << section;
  }
  EXPECT_EQ(markdown.find("runs FP8 layers on the CPU"), std::string::npos);

  const nlohmann::json study = nlohmann::json::parse(testing::bytes_of(out / "study.json"));
  EXPECT_TRUE(study.at("environment").contains("onednn"));
  EXPECT_TRUE(study.at("environment").contains("gpu"));
  const auto& cells = study.at("speed_matrix").at("cells");
  EXPECT_EQ(cells.size(), 8u) << "fp16 and fp8 all at batches 1 and 2, levels 3 and 1";
  for (const char* chart : {"latency.svg", "accuracy_vs_speed.svg"}) {
    const std::string svg = testing::bytes_of(out / chart);
    EXPECT_NE(svg.find("DEMO"), std::string::npos) << family << ": " << chart << " is not marked demo";
  }
}

// The detector's demo, small: two variants (fp32 is built as the reference), 3 held-out images.
TEST(StudyFamilies, Yolov10DetectorReportParsesAndJudgesBoxesAndMap) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "yolov10";
  const auto ran = run_kiln("study " + (kFamilies / "yolov10").string() +
                            " --variants fp16,'fp8 all max' --images 4 --rounds 1 --seconds-per-round 20ms "
                            "--resamples 100 -o " +
                            out.string());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const std::string markdown = testing::bytes_of(out / "STUDY.md");
  std::vector<std::string> errors;
  const auto tables = testing::parse_tables(markdown, errors);
  for (const std::string& error : errors) ADD_FAILURE() << "yolov10: " << error;
  EXPECT_GE(tables.size(), 5u) << "recipe, environment, speed, boxes and mAP, kernel time";
  expect_environment_fields(tables, "yolov10");
  expect_only_own_parts(markdown, "yolov10");
  const auto boxes = std::find_if(tables.begin(), tables.end(), [](const testing::ParsedTable& t) {
    return !t.header.empty() && t.header.size() > 1 && t.header[1] == "fp32 boxes compared";
  });
  ASSERT_NE(boxes, tables.end()) << "no boxes and mAP table";
  EXPECT_EQ(boxes->header.size(), 14u);
  ASSERT_EQ(boxes->rows.size(), 2u);
  EXPECT_EQ(boxes->rows[0][9], "baseline");
  for (const char* section : {"## Summary and decision", "## What was not tried", "## When to revisit",
                              "### Boxes and mAP", "Demo run", "trained from scratch"}) {
    EXPECT_NE(markdown.find(section), std::string::npos) << section;
  }
  for (const char* classifier : {"agreement with fp32", "top-1 (95% CI)", "logit error", "McNemar"}) {
    EXPECT_EQ(markdown.find(classifier), std::string::npos)
        << "a detector's report names '" << classifier << "'";
  }

  const nlohmann::json study = nlohmann::json::parse(testing::bytes_of(out / "study.json"));
  EXPECT_EQ(study.at("data").at("held_out_images"), 3);
  EXPECT_EQ(study.at("data").at("imgsz"), 256);
  const nlohmann::json& fp8 = study.at("variants").at(1);
  EXPECT_EQ(fp8.at("box_parity_vs_fp32").at("images"), 3);
  EXPECT_EQ(fp8.at("map_drop_vs_baseline").at("resamples"), 100);
  EXPECT_EQ(fp8.at("non_finite_inputs").at("of_stress_inputs"), 13);
  const std::string outcome = study.at("decision").at("outcome");
  EXPECT_TRUE(outcome == "do not ship" || outcome == "cannot tell" || outcome == "ship") << outcome;
  if (study.at("warnings").empty()) {
    EXPECT_EQ(outcome, "do not ship") << "FP8 is simulated on the CPU, so it is never faster";
  } else {  // timed on a loaded machine (tests run side by side): no speed is judged, nothing ships
    EXPECT_NE(outcome, "ship") << study.at("warnings");
  }
  for (const char* chart : {"latency.svg", "accuracy_vs_speed.svg"}) {
    EXPECT_NE(testing::bytes_of(out / chart).find("DEMO"), std::string::npos) << chart;
  }
}

// The reports committed beside each family (its demo's `study/`, its GPU studies' `study-cuda/`): made by
// earlier kiln versions, they must still parse, carry every environment field and name only their family.
TEST(StudyFamilies, CommittedReportsParseAndNameOnlyTheirFamily) {
  int reports = 0;
  for (const auto& family : fs::directory_iterator(kFamilies)) {
    if (!kOwnParts.contains(family.path().filename().string())) continue;
    for (const auto& entry : fs::directory_iterator(family.path())) {
      const fs::path report = entry.path() / "STUDY.md";
      if (!entry.is_directory() || !fs::exists(report)) continue;
      ++reports;
      const std::string name = family.path().filename().string();
      const std::string markdown = testing::bytes_of(report);
      std::vector<std::string> errors;
      const auto tables = testing::parse_tables(markdown, errors);
      for (const std::string& error : errors) ADD_FAILURE() << report << ": " << error;
      expect_environment_fields(tables, report.string());
      expect_only_own_parts(markdown, name);
    }
  }
  EXPECT_GE(reports, 6) << "the demos of resnest and yolov10, the GPU studies of the four families";
}

INSTANTIATE_TEST_SUITE_P(Classifiers, StudyFamilies,
                         ::testing::Values("timm_resnest", "timm_resnet", "timm_efficientnet"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace kiln
