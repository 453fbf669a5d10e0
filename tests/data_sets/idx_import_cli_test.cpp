// kiln dataset import-idx as a user runs it: the text and --json reports, the output opened by
// `kiln dataset`, and usage errors (exit 2) and refusals (exit 1) as one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../io/image_test_files.h"
#include "cli_runner.h"
#include "idx_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::run_kiln;
using testing::ScratchDir;
using testing::write_file;

struct IdxPair {
  fs::path images;
  fs::path labels;
};

IdxPair make_pair(const ScratchDir& dir) {
  return {write_file(dir.file("images.gz"), testing::gzip(testing::idx_images(12, 4, 4))),
          write_file(dir.file("labels.idx"), testing::idx_labels({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1}))};
}

std::string import_args(const IdxPair& pair, const fs::path& out) {
  return "dataset import-idx --idx-images " + pair.images.string() + " --idx-labels " + pair.labels.string() +
         " -o " + out.string();
}

void expect_one_error_line(const testing::CliResult& result, int exit_code, const std::string& what) {
  EXPECT_EQ(result.exit_code, exit_code) << result.output;
  EXPECT_EQ(result.output.rfind("kiln: error: ", 0), 0u) << result.output;
  EXPECT_EQ(result.output.find('\n'), result.output.size() - 1) << result.output;
  EXPECT_NE(result.output.find(what), std::string::npos) << result.output;
}

TEST(IdxImportCli, WritesShardsThatKilnDatasetDescribes) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  const fs::path out = dir.file("wds");
  const auto result =
      run_kiln(import_args(pair, out) + " --shard-size 5 --json " + dir.file("r.json").string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("imported 12 of 12 images (4x4 grey)"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("3 webdataset shard(s)"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("classes  10"), std::string::npos) << result.output;
  const nlohmann::json report = nlohmann::json::parse(testing::read_bytes(dir.file("r.json")));
  EXPECT_EQ(report["images"], 12);
  EXPECT_EQ(report["shards"].size(), 3u);
  EXPECT_EQ(report["classes"][1]["images"], 3);
  const auto described = run_kiln("dataset " + out.string() + " --num-classes 10 --check");
  ASSERT_EQ(described.exit_code, 0) << described.output;
  EXPECT_NE(described.output.find("webdataset, 3 shard(s)"), std::string::npos) << described.output;
  EXPECT_NE(described.output.find("10 classes seen, labels 0 to 9"), std::string::npos) << described.output;
  EXPECT_NE(described.output.find("12 decoded, 0 bad"), std::string::npos) << described.output;
}

TEST(IdxImportCli, ClassNamesShowInKilnDataset) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  std::string names;
  for (int index = 0; index < 10; ++index)
    names += "class " + std::string(1, static_cast<char>('a' + index)) + "," + std::to_string(index) + "\n";
  const fs::path names_file = write_file(dir.file("names.txt"), names);
  const auto result = run_kiln(import_args(pair, dir.file("wds")) + " --names " + names_file.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("1 class b (3)"), std::string::npos) << result.output;
  const auto described = run_kiln("dataset " + dir.file("wds").string() + " --json -");
  ASSERT_EQ(described.exit_code, 0) << described.output;
  const nlohmann::json report = nlohmann::json::parse(described.output);
  EXPECT_EQ(report["class_names"][9], "class j");
  const auto text = run_kiln("dataset " + dir.file("wds").string());
  EXPECT_NE(text.output.find("names    0 class a, 1 class b,"), std::string::npos) << text.output;
}

TEST(IdxImportCli, WritesClassFolders) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  const auto result = run_kiln(import_args(pair, dir.file("folders")) + " --format folder --first 11");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(fs::is_regular_file(dir.file("folders/9/000009.png")));
  EXPECT_FALSE(fs::exists(dir.file("folders/1/000011.png")));
  const auto described = run_kiln("dataset " + dir.file("folders").string());
  EXPECT_NE(described.output.find("images   11"), std::string::npos) << described.output;
}

TEST(IdxImportCli, UsageErrors) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  expect_one_error_line(run_kiln("dataset import-idx --idx-images " + pair.images.string() + " -o x"), 2,
                        "--idx-labels");
  expect_one_error_line(run_kiln(import_args(pair, dir.file("o")) + " --format folder --shard-size 3"), 2,
                        "--shard-size applies only to --format webdataset");
  expect_one_error_line(run_kiln(import_args(pair, dir.file("o")) + " --format zip"), 2, "--format");
  expect_one_error_line(run_kiln(import_args(pair, dir.file("o")) + " --first 0"), 2, "--first");
  expect_one_error_line(
      run_kiln("dataset " + dir.file("").string() + " " + import_args(pair, dir.file("o")).substr(8)), 2,
      "import-idx was given");
  expect_one_error_line(run_kiln("dataset"), 2, "kiln dataset needs DATA");
  EXPECT_FALSE(fs::exists(dir.file("o")));
}

TEST(IdxImportCli, RefusesOutputOverInputAndNonEmptyFolders) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  expect_one_error_line(run_kiln(import_args(pair, pair.labels)), 1, "names the same file as --idx-labels");
  write_file(dir.file("full/keep.txt"), "mine");
  expect_one_error_line(run_kiln(import_args(pair, dir.file("full"))), 1, "-o is not empty: give --force");
  ASSERT_EQ(run_kiln(import_args(pair, dir.file("full")) + " --force").exit_code, 0);
  EXPECT_EQ(testing::read_bytes(dir.file("full/keep.txt")).size(), 4u);
  expect_one_error_line(
      run_kiln(import_args(pair, dir.file("full")) + " --json " + dir.file("full/labels.txt").string()), 1,
      "--json names the same file as -o");
  const fs::path broken = write_file(dir.file("broken.idx"), testing::idx_labels({1}));
  expect_one_error_line(run_kiln("dataset import-idx --idx-images " + broken.string() + " --idx-labels " +
                                 pair.labels.string() + " -o " + dir.file("o").string()),
                        1, "a labels file?");
}

// --images is a count in every other command, -o is --output in every other: the old names of the IDX
// files and the output folder still work, each with one warning naming the new one.
TEST(IdxImportCli, OldOptionNamesWorkAndWarn) {
  ScratchDir dir;
  const IdxPair pair = make_pair(dir);
  const auto result = run_kiln("dataset import-idx --images " + pair.images.string() + " --labels " +
                               pair.labels.string() + " --out " + dir.file("old").string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const std::string renamed :
       {"--images is an old name of --idx-images", "--labels is an old name of --idx-labels",
        "--out is an old name of --output"})
    EXPECT_NE(result.output.find("kiln: warning: " + renamed), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(dir.file("old/labels.txt")));
  const auto help = run_kiln("dataset import-idx --help");
  EXPECT_NE(help.output.find("-o,--output"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--idx-images"), std::string::npos) << help.output;
}

TEST(IdxImportCli, HelpExplainsTheLayouts) {
  const auto result = run_kiln("dataset import-idx --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.output.find("KEY.cls"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("OUT/CLASS/KEY.png"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace kiln
