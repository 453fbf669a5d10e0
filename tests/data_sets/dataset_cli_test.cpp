// kiln dataset as a user runs it: the description, sample and split counts, --check listing bad
// images, --strict, --json, and one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "data_set_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::run_kiln;
using testing::ScratchDir;
using testing::TarWriter;

// 40 labelled samples over two shards, every 7th image a truncated JPEG when `bad` is set.
fs::path make_shards(const ScratchDir& dir, bool bad) {
  const fs::path shards = dir.file("wds");
  const std::string png = testing::png_bytes(dir.file(""), 8, 8);
  const std::string broken = testing::photo_bytes().substr(0, 500);
  for (int shard = 0; shard < 2; ++shard) {
    TarWriter tar;
    for (int i = shard * 20; i < shard * 20 + 20; ++i) {
      const std::string key = std::string("img").append(std::to_string(1000 + i));
      tar.add(key + ".png", bad && i % 7 == 3 ? broken : png);
      tar.add(key + ".cls", std::to_string(i % 10));
    }
    tar.write(shards / ("part-" + std::to_string(shard) + ".tar"));
  }
  return shards;
}

TEST(DatasetCli, DescribesShardsSampleAndSplit) {
  ScratchDir dir;
  const fs::path shards = make_shards(dir, false);
  const auto result =
      run_kiln("dataset '" + (shards / "part-{0..1}.tar").string() + "' --sample 20 --split-every 4 --check");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("webdataset, 2 shard(s)"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("images   40"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("10 classes seen, labels 0 to 9"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("sample   20 of 40"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("5 calibration, 15 held out"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("20 decoded, 0 bad"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("check 20/20 (100%)"), std::string::npos) << result.output;
}

TEST(DatasetCli, CheckListsBadImagesAndFails) {
  ScratchDir dir;
  const fs::path shards = make_shards(dir, true);
  const auto result = run_kiln("dataset " + shards.string() + " --check");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  // i % 7 == 3 for i in [0, 40): 3, 10, 17, 24, 31, 38.
  EXPECT_NE(result.output.find("skipped " + (shards / "part-0.tar").string() + ":img1003: "),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find(":img1038: "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("34 decoded, 6 bad"), std::string::npos) << result.output;

  const auto strict = run_kiln("dataset " + shards.string() + " --check --strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_NE(strict.output.find("kiln: error: " + (shards / "part-0.tar").string() + ":img1003: "),
            std::string::npos)
      << strict.output;
  EXPECT_EQ(strict.output.find("img1010"), std::string::npos) << strict.output;
}

TEST(DatasetCli, JsonReport) {
  ScratchDir dir;
  const fs::path shards = make_shards(dir, true);
  const auto result = run_kiln("dataset " + shards.string() + " --sample 10 --split-every 2 --check --json");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  // The runner merges stderr (progress, skipped images) into the output; the report is on stdout,
  // from the first line that opens an object.
  const std::size_t brace = result.output.find("\n{");
  const auto report = nlohmann::json::parse(result.output.substr(brace == std::string::npos ? 0 : brace + 1));
  EXPECT_EQ(report["kind"], "webdataset");
  EXPECT_EQ(report["images"], 40);
  EXPECT_EQ(report["labelled"], true);
  EXPECT_EQ(report["classes_seen"], 10);
  EXPECT_EQ(report["sample"]["count"], 10);
  EXPECT_EQ(report["split"]["calibration"], 5);
  EXPECT_EQ(report["split"]["held_out"], 5);
  // The sample is indices 0, 4, ..., 36; of those only 24 is bad.
  ASSERT_EQ(report["check"]["bad"].size(), 1u);
  EXPECT_NE(report["check"]["bad"][0]["name"].get<std::string>().find("img1024"), std::string::npos);
}

TEST(DatasetCli, UnlabelledFolderAndErrors) {
  ScratchDir dir;
  const fs::path calib = dir.file("calib");
  for (const char* name : {"a.jpg", "b.jpg"}) testing::write_text(calib / name, testing::photo_bytes());
  auto result = run_kiln("dataset " + calib.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("kind     folder"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("labels   none"), std::string::npos) << result.output;

  fs::create_directories(dir.file("empty"));
  result = run_kiln("dataset " + dir.file("empty").string());
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_EQ(result.output.rfind("kiln: error: ", 0), 0u) << result.output;
  EXPECT_NE(result.output.find("no images"), std::string::npos) << result.output;

  result = run_kiln("dataset " + calib.string() + " --sample 3");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("3 images of a dataset of 2"), std::string::npos) << result.output;

  const fs::path shards = make_shards(dir, false);
  result = run_kiln("dataset " + shards.string() + " --num-classes 5");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("img1005: label 5 is out of range"), std::string::npos) << result.output;
  EXPECT_EQ(run_kiln("dataset " + shards.string() + " --num-classes 10").exit_code, 0);
}

}  // namespace
}  // namespace kiln
