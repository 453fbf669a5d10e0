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

void expect_interval(const nlohmann::json& interval, const std::string& where) {
  ASSERT_TRUE(interval.is_object()) << where;
  const double low = interval.at("ci95_low"), estimate = interval.at("estimate"),
               high = interval.at("ci95_high");
  EXPECT_LE(low, estimate) << where;
  EXPECT_LE(estimate, high) << where;
  EXPECT_LT(low, high) << where << ": a dozen images leave a wide interval";
}

// Every variant's rates carry 95% intervals; every variant but the baseline its paired drop; the
// decision one of three outcomes with a verdict per FP8 variant.
void expect_intervals(const nlohmann::json& study) {
  const std::int64_t held_out = study.at("data").at("held_out_images");
  for (const auto& v : study.at("variants")) {
    const std::string name = v.at("name");
    const nlohmann::json& stats = v.at("statistics");
    EXPECT_EQ(stats.at("images"), held_out) << name;
    expect_interval(stats.at("top1_agreement_with_fp32"), name);
    const nlohmann::json& paired = stats.at("top1_agreement_vs_baseline");
    if (name == "fp16") {
      EXPECT_TRUE(paired.is_null());
      continue;
    }
    expect_interval(paired.at("drop"), name + " drop");
    const double p = paired.at("mcnemar_exact_p");
    EXPECT_GT(p, 0.0);
    EXPECT_LE(p, 1.0);
    EXPECT_EQ(paired.at("images_both_succeed").get<std::int64_t>() +
                  paired.at("images_only_baseline_succeeds").get<std::int64_t>() +
                  paired.at("images_only_variant_succeeds").get<std::int64_t>() +
                  paired.at("images_neither_succeeds").get<std::int64_t>(),
              held_out);
  }
  const nlohmann::json& decision = study.at("decision");
  const std::string outcome = decision.at("outcome");
  EXPECT_TRUE(outcome == "ship" || outcome == "do not ship" || outcome == "cannot tell") << outcome;
  EXPECT_EQ(decision.at("held_out_images"), held_out);
  for (const auto& verdict : decision.at("variants")) EXPECT_FALSE(verdict.at("reasons").empty());
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
  expect_intervals(study);
  EXPECT_NE(markdown.find("agreement with fp32 (95% CI)"), std::string::npos);
  // The demo's images are labelled (Fashion-MNIST): top-1 against labels is judged too.
  EXPECT_NE(markdown.find("top-1 against labels (vs fp16)"), std::string::npos);
  EXPECT_EQ(markdown.find("unlabelled data"), std::string::npos);

  const auto again = quick_study(second);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  std::ifstream second_file(second / "study.json");
  EXPECT_EQ(accuracy_of(nlohmann::json::parse(second_file)), accuracy_of(study))
      << "accuracy must not change";
}

// The photos sorted into three class folders: labelled data, so top-1 has its interval and its paired
// drop; and the auto recipe, searched on calibration images, is checked on the held-out ones.
TEST(StudyCli, LabelledStudyJudgesTopOneAndAutoOnHeldOutImages) {
  const Scratch scratch;
  const fs::path data = scratch.dir() / "labelled";
  int i = 0;
  for (const auto& photo : fs::directory_iterator(testing::kPhotos)) {
    if (photo.path().extension() == ".md") continue;
    const fs::path folder = data / std::string(1, static_cast<char>('a' + i++ % 3));
    fs::create_directories(folder);
    fs::copy_file(photo.path(), folder / photo.path().filename());
  }
  const fs::path out = scratch.dir() / "study";
  const auto ran =
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --data " + data.string() +
               " --variants fp16,'fp8 auto max' --rounds 1 --seconds-per-round 50ms -o " + out.string());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  std::ifstream json_file(out / "study.json");
  const nlohmann::json study = nlohmann::json::parse(json_file);
  expect_intervals(study);
  EXPECT_TRUE(study.at("decision").at("labelled").get<bool>());
  for (const auto& v : study.at("variants")) expect_interval(v.at("statistics").at("top1"), v.at("name"));
  expect_interval(study.at("variants")[1].at("statistics").at("top1_vs_baseline").at("drop"), "top-1 drop");

  const nlohmann::json& verdict = study.at("decision").at("variants").at(0);
  const nlohmann::json& check = verdict.at("auto_target_on_held_out");
  const nlohmann::json& split = study.at("data");
  EXPECT_EQ(check.at("held_out_images"), split.at("held_out_images"));
  EXPECT_LE(check.at("search_images").get<int>(), split.at("calibration_images").get<int>())
      << "the search compares on calibration images only";
  EXPECT_EQ(check.at("search_images"), study.at("variants")[1].at("quantization").at("auto").at("images"));
  const std::string markdown = read_text(out / "STUDY.md");
  EXPECT_NE(markdown.find("top-1 (95% CI)"), std::string::npos);
  EXPECT_NE(markdown.find("none of them held out"), std::string::npos);
  EXPECT_NE(markdown.find("held-out images the target `logit-error<=0.05` is **"), std::string::npos);
  std::vector<std::string> errors;
  testing::parse_tables(markdown, errors);
  for (const std::string& error : errors) ADD_FAILURE() << error;
}

// int8 variants beside FP8 ones: built on the same calibration images, judged by the same decision.
TEST(StudyCli, Int8VariantsAreStudiedBesideFp8Ones) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "int8";
  const auto ran =
      run_kiln("study " + (kFamilies / "timm_resnest").string() +
               " --variants fp32,fp16,'fp8 all max','int8 all max','int8 nose entropy depthwise=per-tensor' --rounds 1 "
               "--seconds-per-round 50ms --batches 1 -o " +
               out.string());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  std::ifstream in(out / "study.json");
  const nlohmann::json study = nlohmann::json::parse(in);
  ASSERT_EQ(study.at("variants").size(), 5u);
  for (const std::size_t i : {3u, 4u}) {
    const nlohmann::json& v = study.at("variants")[i];
    EXPECT_EQ(v.at("quantization").at("format"), "int8") << v.at("name");
    EXPECT_GT(v.at("quantization").at("quantized_layers").get<int>(), 0) << v.at("name");
  }
  EXPECT_EQ(study.at("variants")[4].at("quantization").at("calibration"), "entropy");
  EXPECT_EQ(study.at("variants")[3].at("quantization").at("depthwise_input_scales"), "per-channel");
  EXPECT_EQ(study.at("variants")[4].at("quantization").at("depthwise_input_scales"), "per-tensor");
  EXPECT_EQ(study.at("decision").at("variants").size(), 3u) << "a verdict per FP8 and int8 variant";
  EXPECT_NE(read_text(out / "STUDY.md").find("int8 all max"), std::string::npos);
}

TEST(StudyCli, BadArgumentsAreOneLineErrors) {
  const Scratch scratch;
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --variants fp32"),
      "--variants must include the baseline 'fp16'");
  // Nothing would calibrate on them: an ignored option is an error.
  testing::expect_one_line_error(run_kiln("study " + (kFamilies / "timm_resnest").string() +
                                          " --variants fp32,fp16 --calib " + testing::kPhotos.string()),
                                 "--calib gives images to calibrate FP8 variants on, but the study has none");
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "timm_resnest").string() + " --variants fp16,'fp8 all'"),
      "study variant 'fp8 all'");
  testing::expect_one_line_error(run_kiln("study " + (kFamilies / "timm_resnest").string() +
                                          " --checkpoint " + (testing::kTiny / "model.safetensors").string()),
                                 "needs --data");
}

TEST(StudyCli, DetectorOptionsAndUnlabelledDataAreOneLineErrors) {
  const Scratch scratch;
  testing::expect_one_line_error(run_kiln("study " + (kFamilies / "timm_resnest").string() +
                                          " --min-score 0.3 -o " + (scratch.dir() / "a").string()),
                                 "are for detector families");
  testing::expect_one_line_error(run_kiln("study " + (kFamilies / "timm_resnest").string() +
                                          " --resamples 200 -o " + (scratch.dir() / "b").string()),
                                 "are for detector families");
  // A folder of photos has no labels folder: no mAP can be measured on it.
  const fs::path golden = testing::kData / "golden" / "yolov10n";
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "yolov10").string() + " --checkpoint " +
               (golden / "model.safetensors").string() + " --data " + testing::kPhotos.string() + " -o " +
               (scratch.dir() / "c").string()),
      "not a labelled detection set");
  testing::expect_one_line_error(
      run_kiln("study " + (kFamilies / "yolov10").string() + " --variants fp16,'fp8 auto max' -o " +
               (scratch.dir() / "d").string()),
      "the auto recipe");
}

}  // namespace
}  // namespace kiln
