// open_dataset over each source: class folders, labelled and unlabelled flat folders, and
// webdataset shards (one file, a folder, a brace pattern); with the errors a user can cause.
#include <gtest/gtest.h>

#include "core/error.h"
#include "data/open_dataset.h"
#include "data_set_fixtures.h"
#include "idx_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::TarWriter;

std::string open_error(const std::string& data) {
  try {
    open_dataset(data);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "open_dataset(" << data << ") did not throw";
  return "";
}

void expect_one_line(const std::string& message, const std::string& mention, const std::string& what) {
  EXPECT_NE(message.find(mention), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

std::vector<std::string> names(const Dataset& dataset) {
  std::vector<std::string> out;
  for (const Sample& sample : dataset.samples()) out.push_back(fs::path(sample.name).filename().string());
  return out;
}

std::vector<std::int64_t> labels(const Dataset& dataset) {
  std::vector<std::int64_t> out;
  for (const Sample& sample : dataset.samples()) out.push_back(sample.label);
  return out;
}

TEST(FolderDataset, ClassFoldersInSortedOrderLikeImageFolder) {
  ScratchDir dir;
  const fs::path root = dir.file("imagenet");
  const std::string png = testing::png_bytes(dir.file(""));
  testing::write_text(root / "n02" / "b.png", png);
  testing::write_text(root / "n02" / "A.PNG", png);  // extensions in any case
  testing::write_text(root / "n01" / "nested" / "c.jpg", testing::photo_bytes());
  testing::write_text(root / "n01" / "notes.txt", "not an image");
  testing::write_text(root / "n01" / ".hidden.jpg", png);
  fs::create_directories(root / "n03_empty");
  fs::create_directories(root / ".cache");
  testing::write_text(root / "n04" / "d.webp", "not decoded until loaded");
  const Dataset dataset = open_dataset(root.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kClassFolders);
  EXPECT_EQ(names(dataset), (std::vector<std::string>{"c.jpg", "A.PNG", "b.png", "d.webp"}));
  EXPECT_EQ(labels(dataset), (std::vector<std::int64_t>{0, 1, 1, 3}));  // the empty folder keeps index 2
  EXPECT_TRUE(dataset.labelled());
  EXPECT_EQ(dataset.classes_seen(), 3u);
  EXPECT_EQ(dataset.load(1).width, 4);
  EXPECT_EQ(dataset.load(0).width, decode_image(testing::kPhotos / "dog.jpg").width);
}

TEST(FolderDataset, ClassFoldersMappedByLabelsFile) {
  ScratchDir dir;
  const fs::path root = dir.file("val");
  const std::string png = testing::png_bytes(dir.file(""));
  testing::write_text(root / "n01443537" / "x.png", png);
  testing::write_text(root / "n01440764" / "y.png", png);
  testing::write_text(root / "labels.txt", "n01440764 0\nn01443537 1\nn99999999 999\n");
  const Dataset dataset = open_dataset(root.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kClassFolders);
  EXPECT_EQ(labels(dataset), (std::vector<std::int64_t>{0, 1}));

  testing::write_text(root / "labels.txt", "n01440764 0\n");
  expect_one_line(open_error(root.string()), "labels.txt", "n01443537");
}

TEST(FolderDataset, FlatFolderWithLabelsFile) {
  ScratchDir dir;
  const fs::path root = dir.file("flat");
  const std::string png = testing::png_bytes(dir.file(""));
  for (const char* name : {"b.png", "a.png", "c.png"}) testing::write_text(root / name, png);
  testing::write_text(root / "labels.csv", "filename,label\na.png,5\nb.png,0\nc.png,7\nremoved.png,1\n");
  const Dataset dataset = open_dataset(root.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kLabelledFolder);
  EXPECT_EQ(names(dataset), (std::vector<std::string>{"a.png", "b.png", "c.png"}));
  EXPECT_EQ(labels(dataset), (std::vector<std::int64_t>{5, 0, 7}));
  EXPECT_NO_THROW(dataset.check_labels(8));

  testing::write_text(root / "labels.csv", "a.png,5\nb.png,0\n");
  expect_one_line(open_error(root.string()), "c.png", "not listed");
}

TEST(FolderDataset, FlatUnlabelledFolder) {
  ScratchDir dir;
  const fs::path root = dir.file("calib");
  testing::write_text(root / "z.jpg", testing::photo_bytes());
  testing::write_text(root / "y.JPEG", testing::photo_bytes("apple.jpg"));
  fs::create_directories(root / "empty_sub");
  const Dataset dataset = open_dataset(root.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kFolder);
  EXPECT_FALSE(dataset.labelled());
  EXPECT_EQ(dataset.classes_seen(), 0u);
  EXPECT_EQ(names(dataset), (std::vector<std::string>{"y.JPEG", "z.jpg"}));
  EXPECT_EQ(labels(dataset), (std::vector<std::int64_t>{kNoLabel, kNoLabel}));
  EXPECT_NO_THROW(dataset.check_labels(1000));
  EXPECT_GT(dataset.load(1).width, 0);
}

TEST(FolderDataset, EmptyAndAmbiguousFolders) {
  ScratchDir dir;
  fs::create_directories(dir.file("empty"));
  expect_one_line(open_error(dir.file("empty").string()), "empty", "no images");
  testing::write_text(dir.file("text_only") / "readme.txt", "hello");
  expect_one_line(open_error(dir.file("text_only").string()), "text_only", "no images");
  fs::create_directories(dir.file("empty_classes") / "a");
  expect_one_line(open_error(dir.file("empty_classes").string()), "empty_classes", "no images");
  const std::string png = testing::png_bytes(dir.file(""));
  testing::write_text(dir.file("mixed") / "top.png", png);
  testing::write_text(dir.file("mixed") / "cls" / "inner.png", png);
  expect_one_line(open_error(dir.file("mixed").string()), "mixed", "both directly and in sub-folders");
  expect_one_line(open_error(dir.file("missing").string()), "missing", "does not exist");
  testing::write_text(dir.file("model.bin"), "x");
  expect_one_line(open_error(dir.file("model.bin").string()), "model.bin", "expected a folder");
}

TEST(Dataset, LabelsOutOfRangeNameSampleAndLabel) {
  ScratchDir dir;
  const fs::path root = dir.file("flat");
  const std::string png = testing::png_bytes(dir.file(""));
  testing::write_text(root / "a.png", png);
  testing::write_text(root / "b.png", png);
  testing::write_text(root / "labels.txt", "a.png 3\nb.png 1000\n");
  const Dataset dataset = open_dataset(root.string());
  try {
    dataset.check_labels(1000);
    FAIL() << "labels out of range were accepted";
  } catch (const Error& error) {
    expect_one_line(error.what(), (root / "b.png").string(), "label 1000 is out of range");
  }
  EXPECT_NO_THROW(dataset.check_labels(1001));
}

TEST(Dataset, PartlyLabelledIsAnError) {
  std::vector<Sample> samples{{"a", 1, "a", 0, std::nullopt, nullptr},
                              {"b", kNoLabel, "b", 0, std::nullopt, nullptr}};
  try {
    Dataset(DatasetKind::kWebDataset, "src", samples);
    FAIL() << "a partly labelled dataset was accepted";
  } catch (const Error& error) {
    expect_one_line(error.what(), "b", "has no label");
  }
  EXPECT_THROW(Dataset(DatasetKind::kFolder, "src", {}), Error);
}

TEST(Dataset, CorruptImageNamesTheSample) {
  ScratchDir dir;
  const fs::path root = dir.file("flat");
  testing::write_text(root / "bad.jpg", "\xFF\xD8\xFF garbage");
  const Dataset dataset = open_dataset(root.string());
  try {
    dataset.load(0);
    FAIL() << "a corrupt image loaded";
  } catch (const Error& error) {
    expect_one_line(error.what(), (root / "bad.jpg").string(), "JPEG");
  }
}

// A shard of `count` samples keyed s<first>..; each a PNG (or the photo for every third) and a .cls.
void write_shard(const fs::path& path, const std::string& png, int first, int count, bool labelled = true) {
  TarWriter tar;
  for (int i = first; i < first + count; ++i) {
    const std::string key = std::string("s").append(std::to_string(1000 + i));
    if (i % 3 == 0) {
      tar.add(key + ".jpg", testing::photo_bytes());
    } else {
      tar.add(key + ".png", png);
    }
    tar.add(key + ".json", "{}");
    if (labelled) tar.add(key + ".cls", std::to_string(i % 5) + "\n");
  }
  tar.write(path);
}

TEST(WebDataset, OneShardFolderAndPatternAgree) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  const fs::path shards = dir.file("shards");
  write_shard(shards / "shard-000000.tar", png, 0, 4);
  write_shard(shards / "shard-000001.tar", png, 4, 3);
  write_shard(shards / "shard-000002.tar", png, 7, 2);
  testing::write_text(shards / "README.md", "not a shard");

  const Dataset one = open_dataset((shards / "shard-000001.tar").string());
  EXPECT_EQ(one.kind(), DatasetKind::kWebDataset);
  ASSERT_EQ(one.size(), 3u);
  EXPECT_EQ(one.sample(0).name, (shards / "shard-000001.tar").string() + ":s1004");
  EXPECT_EQ(labels(one), (std::vector<std::int64_t>{4, 0, 1}));

  const Dataset folder = open_dataset(shards.string());
  const Dataset pattern = open_dataset((shards / "shard-{000000..000002}.tar").string());
  ASSERT_EQ(folder.size(), 9u);
  EXPECT_EQ(folder.shards().size(), 3u);
  ASSERT_EQ(pattern.size(), 9u);
  for (std::size_t i = 0; i < folder.size(); ++i) {
    EXPECT_EQ(folder.sample(i).name, pattern.sample(i).name);
    EXPECT_EQ(folder.sample(i).label, static_cast<std::int64_t>(i % 5));
    EXPECT_NE(folder.sample(i).name.find(":s" + std::to_string(1000 + i)), std::string::npos);
  }
  EXPECT_EQ(folder.classes_seen(), 5u);
  EXPECT_EQ(folder.load(0).rgb, decode_image(testing::kPhotos / "dog.jpg").rgb);
  const Image png_image = folder.load(1);
  EXPECT_EQ(png_image.width, 4);
  EXPECT_EQ(png_image.height, 3);
  EXPECT_EQ(folder.read_bytes(1).size(), png.size());

  expect_one_line(open_error((shards / "shard-{000000..000003}.tar").string()), "shard-000003.tar",
                  "does not exist");
}

TEST(WebDataset, UnlabelledShardsAndKeysWithFolders) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  TarWriter tar;
  tar.add("val/a.b.PNG", png);  // key "val/a", extension "b.png": not an image extension
  tar.add("val/x.webp", "webp bytes");
  tar.add("val/y.jpeg", png);
  tar.add("val/.DS_Store", "");
  tar.add("__meta__.json", "{}");
  tar.write(dir.file("u.tar"));
  const Dataset dataset = open_dataset(dir.file("u.tar").string());
  EXPECT_FALSE(dataset.labelled());
  ASSERT_EQ(dataset.size(), 2u);
  EXPECT_EQ(dataset.sample(0).name, dir.file("u.tar").string() + ":val/x");
  EXPECT_EQ(dataset.sample(1).name, dir.file("u.tar").string() + ":val/y");
  EXPECT_EQ(dataset.load(1).width, 4);
  try {
    dataset.load(0);
    FAIL() << "a corrupt member loaded";
  } catch (const Error& error) {
    expect_one_line(error.what(), dir.file("u.tar").string() + ":val/x", "WebP");
  }
}

TEST(WebDataset, SampleErrors) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  {
    TarWriter tar;
    tar.add("k.png", png);
    tar.add("k.jpg", png);
    tar.write(dir.file("two.tar"));
    expect_one_line(open_error(dir.file("two.tar").string()), "two.tar", "two images");
  }
  {
    TarWriter tar;
    tar.add("k.cls", "1");
    tar.write(dir.file("nocls.tar"));
    expect_one_line(open_error(dir.file("nocls.tar").string()), "nocls.tar", "no image");
  }
  {
    TarWriter tar;
    tar.add("k.png", png);
    tar.add("k.cls", "cat");
    tar.write(dir.file("badcls.tar"));
    expect_one_line(open_error(dir.file("badcls.tar").string()), "badcls.tar:k", "class index");
  }
  {
    TarWriter tar;
    tar.add("k.png", png);
    tar.add("k.cls", "1");
    tar.add("m.png", png);
    tar.write(dir.file("partial.tar"));
    expect_one_line(open_error(dir.file("partial.tar").string()), "partial.tar:m", "has no label");
  }
  {
    TarWriter tar;
    tar.add("readme.txt", "nothing");
    tar.write(dir.file("none.tar"));
    expect_one_line(open_error(dir.file("none.tar").string()), "none.tar", "no images");
  }
  fs::create_directories(dir.file("tars"));
  TarWriter().write(dir.file("tars") / "empty.tar");
  expect_one_line(open_error(dir.file("tars").string()), "tars", "no images");
}

TEST(WebDataset, ShardFolderBesideImageFolderIsAmbiguous) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  const fs::path root = dir.file("both");
  write_shard(root / "a.tar", png, 0, 2);
  fs::create_directories(root / "metadata");
  EXPECT_EQ(open_dataset(root.string()).size(), 2u);  // a folder without images is no class folder
  testing::write_text(root / "cat" / "x.png", png);
  expect_one_line(open_error(root.string()), "both", "both .tar shards and image folders");
}

TEST(WebDataset, BrokenShardNamesShardAndOffset) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  TarWriter tar;
  tar.add("a.png", png);
  tar.add("a.cls", "1");
  tar.add("b.png", png);
  tar.add("b.cls", "2");
  std::string bytes = tar.bytes();
  bytes[tar.header_offset(2) + 1] ^= 1;
  testing::write_text(dir.file("bad.tar"), bytes);
  expect_one_line(open_error(dir.file("bad.tar").string()), "bad.tar",
                  "checksum at offset " + std::to_string(tar.header_offset(2)));
  testing::write_text(dir.file("cut.tar"), tar.bytes().substr(0, tar.header_offset(2) + 600));
  expect_one_line(open_error(dir.file("cut.tar").string()), "cut.tar",
                  "offset " + std::to_string(tar.header_offset(2)));
}

// A gzip-compressed shard reads as the same samples, labels and image bytes as the plain one, from a
// folder too; errors still name the shard, and a .tar.gz that holds no gzip data is refused.
TEST(WebDataset, GzipShardsReadLikePlainOnes) {
  ScratchDir dir;
  const std::string png = testing::png_bytes(dir.file(""));
  const fs::path plain = dir.file("plain") / "shard-000000.tar";
  write_shard(plain, png, 0, 5);
  const std::string tar_bytes = testing::read_text(plain);
  const fs::path packed = dir.file("packed");
  testing::write_text(packed / "shard-000000.tar.gz", testing::gzip(tar_bytes));
  testing::write_text(packed / "shard-000001.TGZ", testing::gzip(tar_bytes));

  const Dataset a = open_dataset(plain.string());
  const Dataset b = open_dataset((packed / "shard-000000.tar.gz").string());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b.sample(i).label, a.sample(i).label);
    EXPECT_EQ(b.read_bytes(i), a.read_bytes(i));
  }
  EXPECT_EQ(b.load(0).rgb, decode_image(testing::kPhotos / "dog.jpg").rgb);
  EXPECT_EQ(open_dataset(packed.string()).size(), 2 * a.size());

  std::string broken = tar_bytes;
  broken[1] ^= 1;  // the first header's checksum no longer matches
  testing::write_text(dir.file("broken.tar.gz"), testing::gzip(broken));
  expect_one_line(open_error(dir.file("broken.tar.gz").string()), "broken.tar.gz", "checksum at offset 0");
  testing::write_text(dir.file("plain.tar.gz"), tar_bytes);
  expect_one_line(open_error(dir.file("plain.tar.gz").string()), "plain.tar.gz", "holds no gzip data");
}

}  // namespace
}  // namespace kiln
