// import_idx round trips: an IDX pair made here, written as webdataset shards and as class folders,
// opened with open_dataset: labels as the IDX file says, and every decoded pixel (all three channels,
// as PIL's convert("RGB") gives a grey image) equal to the IDX byte. Also the output folder rules.
#include "data/idx_import.h"

#include <gtest/gtest.h>

#include "../io/image_test_files.h"
#include "core/error.h"
#include "data/labels_file.h"
#include "data/open_dataset.h"
#include "idx_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::idx_images;
using testing::idx_labels;
using testing::ScratchDir;
using testing::write_file;

constexpr std::uint32_t kRows = 5;
constexpr std::uint32_t kCols = 3;
const std::vector<std::uint8_t> kLabels = {3, 0, 2, 2, 1, 0, 3};

IdxImportRequest make_request(const ScratchDir& dir, bool gz) {
  const std::string images = idx_images(static_cast<std::uint32_t>(kLabels.size()), kRows, kCols);
  IdxImportRequest request;
  request.images = write_file(dir.file(gz ? "images.gz" : "images.idx"), gz ? testing::gzip(images) : images);
  request.labels = write_file(dir.file("labels.idx"), idx_labels(kLabels));
  request.out = dir.file("out");
  return request;
}

// The sample's index in the IDX file, from its KEY (the file name up to the dot).
std::size_t key_index(const Sample& sample) {
  const std::string name = sample.name.substr(sample.name.find_last_of("/:") + 1);
  return std::stoul(name.substr(0, name.find('.')));
}

void expect_matches_idx(const Dataset& dataset, std::size_t count) {
  ASSERT_EQ(dataset.size(), count);
  ASSERT_TRUE(dataset.labelled());
  const std::string pixels = testing::idx_pixels(static_cast<std::uint32_t>(kLabels.size()), kRows, kCols);
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const std::size_t index = key_index(dataset.sample(i));
    EXPECT_EQ(dataset.sample(i).label, kLabels.at(index)) << dataset.sample(i).name;
    const Image image = dataset.load(i);
    ASSERT_EQ(image.width, kCols);
    ASSERT_EQ(image.height, kRows);
    for (std::size_t p = 0; p < kRows * kCols; ++p) {
      const auto expected = static_cast<std::uint8_t>(pixels[index * kRows * kCols + p]);
      for (std::size_t c = 0; c < 3; ++c) ASSERT_EQ(image.rgb[3 * p + c], expected) << dataset.sample(i).name;
    }
  }
}

TEST(IdxImport, WebDatasetRoundTrip) {
  for (const bool gz : {false, true}) {
    ScratchDir dir;
    IdxImportRequest request = make_request(dir, gz);
    request.shard_size = 3;
    const IdxImportResult result = import_idx(request);
    ASSERT_EQ(result.shards.size(), 3u);
    EXPECT_EQ(result.shards[0], dir.file("out/shard-000000.tar"));
    EXPECT_EQ(result.class_counts, (std::vector<std::size_t>{2, 1, 2, 2}));
    const Dataset dataset = open_dataset(request.out.string());
    EXPECT_EQ(dataset.kind(), DatasetKind::kWebDataset);
    expect_matches_idx(dataset, kLabels.size());
    EXPECT_EQ(dataset.classes_seen(), 4u);
    // Samples keep the IDX order, shard by shard.
    EXPECT_EQ(key_index(dataset.sample(4)), 4u);
  }
}

TEST(IdxImport, FolderRoundTripWithNames) {
  ScratchDir dir;
  IdxImportRequest request = make_request(dir, true);
  request.format = IdxImportFormat::kFolder;
  request.names = write_file(dir.file("names.txt"), "Top/shirt,0\nboot 1\n.hidden,2\nzebra,3\n");
  import_idx(request);
  EXPECT_TRUE(fs::is_regular_file(dir.file("out/Top_shirt/000001.png")));
  EXPECT_TRUE(fs::is_regular_file(dir.file("out/_hidden/000002.png")));
  // Sorted folder names would give boot 0; the labels file keeps the IDX indices.
  const auto labels = read_labels_file(dir.file("out/labels.txt"));
  EXPECT_EQ(labels.at("Top_shirt"), 0);
  EXPECT_EQ(labels.at("boot"), 1);
  EXPECT_EQ(labels.at("zebra"), 3);
  const Dataset dataset = open_dataset(request.out.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kClassFolders);
  expect_matches_idx(dataset, kLabels.size());
}

TEST(IdxImport, FirstNAndClassNamesFile) {
  ScratchDir dir;
  IdxImportRequest request = make_request(dir, false);
  request.first = 4;
  request.prefix = "part";
  request.names = write_file(dir.file("names.txt"), "# classes\na,0\nb,1\nc,2\nd,3\n");
  const IdxImportResult result = import_idx(request);
  EXPECT_EQ(result.images, 4u);
  EXPECT_EQ(result.images_in_file, kLabels.size());
  expect_matches_idx(open_dataset(dir.file("out/part-000000.tar").string()), 4);
  const auto names = read_labels_file(dir.file("out/labels.txt"));
  EXPECT_EQ(names.at("d"), 3);
  EXPECT_EQ(names.size(), 4u);
}

std::string import_error(const IdxImportRequest& request) {
  try {
    import_idx(request);
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "import_idx did not throw";
  return {};
}

TEST(IdxImport, RefusesLabelsWithoutNamesAndTooFewImages) {
  ScratchDir dir;
  IdxImportRequest request = make_request(dir, false);
  request.names = write_file(dir.file("names.txt"), "a,0\nb,1\nc,2\n");
  EXPECT_NE(
      import_error(request).find("image 0 has label 3 but " + request.names->string() + " names 3 classes"),
      std::string::npos);
  request.names = write_file(dir.file("gap.txt"), "a,0\nb,1\nd,3\n");
  EXPECT_NE(import_error(request).find("no name for class 2"), std::string::npos);
  request.names.reset();
  request.first = 8;
  EXPECT_NE(import_error(request).find("--first 8: " + request.images.string() + " holds only 7 images"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(request.out));
}

TEST(IdxImport, OutputFolderRules) {
  ScratchDir dir;
  IdxImportRequest request = make_request(dir, false);
  write_file(dir.file("out/notes.md"), "mine");
  EXPECT_NE(import_error(request).find("-o is not empty: give --force"), std::string::npos);
  request.force = true;
  import_idx(request);  // replaces nothing of the user's
  EXPECT_TRUE(fs::exists(dir.file("out/notes.md")));
  import_idx(request);  // and again over its own files
  // A shard the import would not write would join the dataset: refused, and left alone.
  write_file(dir.file("out/other-000000.tar"), "x");
  EXPECT_NE(import_error(request).find("other-000000.tar: in -o, and would be read"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir.file("out/other-000000.tar")));
  // -o naming an input, or an input at a path the import writes.
  request.out = request.images;
  EXPECT_NE(import_error(request).find("names the same file as --idx-images"), std::string::npos);
  request.out = dir.file("");
  request.force = true;
  request.names = write_file(dir.file("labels.txt"), "a,0\nb,1\nc,2\nd,3\n");
  EXPECT_NE(import_error(request).find("-o would write over --names"), std::string::npos);
}

}  // namespace
}  // namespace kiln
