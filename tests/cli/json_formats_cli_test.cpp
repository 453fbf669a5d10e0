// Every JSON document kiln writes carries "format": "kiln.<what>/<N>" (src/io/json_formats.h), and
// docs/JSON.md shows each with an example whose top-level keys are exactly the ones the command writes:
// the commands below are run, and what they wrote is held against the page.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_test_util.h"
#include "data_sets/idx_fixtures.h"
#include "io/json_formats.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::kData;
using testing::kFamilies;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::run_shell;

const fs::path kRepository = kFamilies.parent_path();

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

// The page's ```json examples, by their format.
std::map<std::string, std::set<std::string>> documented() {
  const std::string page = bytes_of(kRepository / "docs" / "JSON.md");
  std::map<std::string, std::set<std::string>> examples;
  const std::string open = "```json\n", close = "\n```";
  for (std::size_t at = page.find(open); at != std::string::npos; at = page.find(open, at)) {
    const std::size_t begin = at + open.size(), end = page.find(close, begin);
    const nlohmann::json example = nlohmann::json::parse(page.substr(begin, end - begin));
    examples[example.at("format").get<std::string>()] = keys_of(example);
    at = end;
  }
  return examples;
}

// What the commands wrote, by the format they should carry; made once for every test.
class JsonFormats : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new testing::Scratch();
    const fs::path dir = scratch_->dir();
    const std::string s = dir.string() + "/", tiny = (kTiny / "model.safetensors").string();
    const std::string trained = (kData / "trained" / "resnest_fashion_tiny" / "model.safetensors").string();
    const std::string dog = (kPhotos / "dog.jpg").string(), yolo = (kData / "golden" / "yolov10n").string();
    const std::string fashion = (kData / "fashion_mnist" / "t10k-first2500").string();
    scratch_->file("images.idx", testing::idx_images(3, 4, 4));
    scratch_->file("labels.idx", testing::idx_labels({0, 1, 2}));
    const std::vector<std::pair<std::string_view, std::string>> commands = {
        {json_format::kBuild, "build " + (kFamilies / "timm_resnest").string() + " --checkpoint " + trained +
                                  " -o " + s + "r.kplan --json " + s + "build.json"},
        {json_format::kRun, "run " + s + "r.kplan --input " + dog + " --json " + s + "run.json"},
        {json_format::kBench,
         "bench " + s + "r.kplan --warmup 0s --duration 50ms --json " + s + "bench.json"},
        {json_format::kEval, "eval " + s + "r.kplan --data " + fashion +
                                 " --images 4 --no-stress --reference " + s + "r.kplan --json " + s +
                                 "eval.json"},
        {json_format::kCheckpoint, "inspect " + trained + " --json " + s + "checkpoint.json"},
        {json_format::kGraph, "inspect " + trained + " --family timm_resnest --json " + s + "graph.json"},
        {json_format::kPlan, "inspect " + s + "r.kplan --json " + s + "plan.json"},
        {json_format::kValidate, "validate --json " + s + "validate.json"},
        {json_format::kDataset, "dataset " + fashion + " --json " + s + "dataset.json"},
        {json_format::kDatasetImport, "dataset import-idx --idx-images " + s + "images.idx --idx-labels " +
                                          s + "labels.idx -o " + s + "idx --json " + s + "import.json"},
        {json_format::kDetections, "run --family yolov10 --checkpoint " + yolo +
                                       "/model.safetensors --input " + dog + " --json " + s +
                                       "detections.json"},
        {json_format::kDetectorEval, "eval " + s + "det.kplan --data " + kPhotos.string() +
                                         " --images 1 --json " + s + "detector_eval.json"},
        {json_format::kStudy, "study " + (kFamilies / "timm_resnest").string() + " --checkpoint " + tiny +
                                  " --data " + kPhotos.string() +
                                  " --variants fp16 --rounds 1 --seconds-per-round 10ms -o " + s + "study"},
        {json_format::kDetectorStudy, "study " + (kFamilies / "yolov10").string() +
                                          " --variants fp16 --images 4 --rounds 1 --seconds-per-round 20ms "
                                          "--resamples 100 -o " +
                                          s + "detector_study"},
    };
    const auto built = run_kiln("build " + (kFamilies / "yolov10").string() + " --checkpoint " + yolo +
                                "/model.safetensors -o " + s + "det.kplan --precision fp32");
    ASSERT_EQ(built.exit_code, 0) << built.output;
    const std::map<std::string_view, std::string> files = {
        {json_format::kBuild, "build.json"},
        {json_format::kRun, "run.json"},
        {json_format::kBench, "bench.json"},
        {json_format::kEval, "eval.json"},
        {json_format::kCheckpoint, "checkpoint.json"},
        {json_format::kGraph, "graph.json"},
        {json_format::kPlan, "plan.json"},
        {json_format::kValidate, "validate.json"},
        {json_format::kDataset, "dataset.json"},
        {json_format::kDatasetImport, "import.json"},
        {json_format::kDetections, "detections.json"},
        {json_format::kDetectorEval, "detector_eval.json"},
        {json_format::kStudy, "study/study.json"},
        {json_format::kDetectorStudy, "detector_study/study.json"}};
    for (const auto& [format, arguments] : commands) {
      // validate reads the families of the folder it runs in.
      const auto result = run_shell("cd " + kRepository.string() + " && " + KILN_BINARY + " " + arguments);
      ASSERT_EQ(result.exit_code, 0) << arguments << "\n" << result.output;
      written_[std::string(format)] = nlohmann::json::parse(bytes_of(dir / files.at(format)));
    }
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }

  static testing::Scratch* scratch_;
  static std::map<std::string, nlohmann::json> written_;
};

testing::Scratch* JsonFormats::scratch_ = nullptr;
std::map<std::string, nlohmann::json> JsonFormats::written_;

TEST_F(JsonFormats, EveryOutputCarriesItsFormat) {
  ASSERT_EQ(written_.size(), 14u);
  for (const auto& [format, json] : written_) EXPECT_EQ(json.value("format", ""), format);
}

TEST_F(JsonFormats, TheDocsShowEveryFormatWithExactlyTheKeysWritten) {
  const auto examples = documented();
  for (const auto& [format, json] : written_) {
    const auto example = examples.find(format);
    ASSERT_NE(example, examples.end()) << format << " has no example in docs/JSON.md";
    const std::set<std::string> keys = keys_of(json);
    for (const std::string& key : keys)
      EXPECT_TRUE(example->second.count(key)) << format << ": docs/JSON.md's example lacks \"" << key << "\"";
    for (const std::string& key : example->second)
      EXPECT_TRUE(keys.count(key)) << format << ": docs/JSON.md shows \"" << key
                                   << "\", which is not written";
  }
  EXPECT_EQ(examples.size(), written_.size()) << "docs/JSON.md documents a format no command writes";
}

}  // namespace
}  // namespace kiln
