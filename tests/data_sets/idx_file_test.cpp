// read_idx_images / read_idx_labels: raw and gzip files, keeping the first N, and every refusal as one
// line naming the file: wrong magic or type, a truncated header or data, data past the claim, a
// header claiming far more than the file holds, corrupt gzip, and an images/labels count mismatch.
#include "data/idx_file.h"

#include <gtest/gtest.h>

#include "../families/family_test_util.h"
#include "../io/image_test_files.h"
#include "core/error.h"
#include "idx_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::gzip;
using testing::idx_bytes;
using testing::idx_images;
using testing::idx_labels;
using testing::ScratchDir;
using testing::write_file;

std::string images_error(const fs::path& path, std::size_t keep = kAllItems) {
  return error_of([&] { read_idx_images(path, keep); });
}

std::string labels_error(const fs::path& path) {
  return error_of([&] { read_idx_labels(path); });
}

void expect_mentions(const std::string& message, const fs::path& path, const std::string& what) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
}

TEST(IdxFile, ReadsRawAndGzipImagesAlike) {
  ScratchDir dir;
  const std::string bytes = idx_images(5, 3, 4);
  for (const fs::path& path :
       {write_file(dir.file("i.idx"), bytes), write_file(dir.file("i.gz"), gzip(bytes))}) {
    const IdxImages images = read_idx_images(path);
    EXPECT_EQ(images.count, 5u);
    EXPECT_EQ(images.rows, 3u);
    EXPECT_EQ(images.cols, 4u);
    EXPECT_EQ(images.kept(), 5u);
    EXPECT_EQ(std::string(images.pixels.begin(), images.pixels.end()), bytes.substr(16)) << path;
  }
}

TEST(IdxFile, KeepsOnlyTheFirstImagesButChecksTheWholeFile) {
  ScratchDir dir;
  const std::string bytes = idx_images(6, 2, 2);
  const IdxImages images = read_idx_images(write_file(dir.file("i.gz"), gzip(bytes)), 2);
  EXPECT_EQ(images.count, 6u);
  EXPECT_EQ(images.kept(), 2u);
  EXPECT_EQ(std::string(images.pixels.begin(), images.pixels.end()), bytes.substr(16, 8));
  const fs::path cut = write_file(dir.file("cut.idx"), bytes.substr(0, bytes.size() - 1));
  expect_mentions(images_error(cut, 1), cut, "truncated");
}

TEST(IdxFile, ReadsLabelsAnyByteValue) {
  ScratchDir dir;
  const std::vector<std::uint8_t> values = {0, 9, 10, 255, 3};
  const IdxLabels labels = read_idx_labels(write_file(dir.file("l.gz"), gzip(idx_labels(values))));
  EXPECT_EQ(labels.count, 5u);
  EXPECT_EQ(labels.labels, values);
}

TEST(IdxFile, ReadsConcatenatedGzipMembers) {
  ScratchDir dir;
  const std::string bytes = idx_images(4, 2, 3);
  const fs::path path = write_file(dir.file("two.gz"), gzip(bytes.substr(0, 20)) + gzip(bytes.substr(20)));
  EXPECT_EQ(read_idx_images(path).pixels.size(), 24u);
}

TEST(IdxFile, RefusesWrongMagicNamingWhatWasExpected) {
  ScratchDir dir;
  const fs::path labels = write_file(dir.file("labels.idx"), idx_labels({1, 2}));
  expect_mentions(images_error(labels), labels, "a labels file?");
  const fs::path images = write_file(dir.file("images.idx"), idx_images(1, 2, 2));
  expect_mentions(labels_error(images), images, "an images file?");
  const fs::path floats = write_file(dir.file("f.idx"), idx_bytes(0x0D, {1, 1, 1}, std::string(4, '\0')));
  expect_mentions(images_error(floats), floats, "float32");
  const fs::path text = write_file(dir.file("t.idx"), "hello, this is not IDX");
  expect_mentions(images_error(text), text, "expected magic 00 00 08 03");
  const fs::path tar_gz =
      write_file(dir.file("t.gz"), gzip(std::string(257, 'x') + "ustar" + std::string(300, '\0')));
  expect_mentions(images_error(tar_gz), tar_gz, "tar");
  const fs::path empty = write_file(dir.file("empty.idx"), "");
  expect_mentions(images_error(empty), empty, "empty");
}

TEST(IdxFile, RefusesTruncatedHeaderAndData) {
  ScratchDir dir;
  const std::string bytes = idx_images(3, 4, 4);
  const fs::path header = write_file(dir.file("h.idx"), bytes.substr(0, 10));
  expect_mentions(images_error(header), header, "truncated IDX header");
  const fs::path data = write_file(dir.file("d.idx"), bytes.substr(0, bytes.size() - 5));
  expect_mentions(images_error(data), data, "truncated");
  const fs::path data_gz = write_file(dir.file("d.gz"), gzip(bytes.substr(0, bytes.size() - 5)));
  expect_mentions(images_error(data_gz), data_gz, "ends after 43 of the 48 bytes");
  const std::string compressed = gzip(bytes);
  const fs::path stream_cut = write_file(dir.file("cut.gz"), compressed.substr(0, compressed.size() - 6));
  expect_mentions(images_error(stream_cut), stream_cut, "gzip");
  std::string flipped = compressed;
  flipped[flipped.size() - 6] = static_cast<char>(flipped[flipped.size() - 6] ^ 0x55);  // the CRC-32
  const fs::path bad_crc = write_file(dir.file("crc.gz"), flipped);
  expect_mentions(images_error(bad_crc), bad_crc, "corrupt gzip data");
}

TEST(IdxFile, RefusesDataPastTheClaim) {
  ScratchDir dir;
  const fs::path raw = write_file(dir.file("long.idx"), idx_images(2, 2, 2) + "x");
  expect_mentions(images_error(raw), raw, "more data than its header claims");
  const fs::path packed = write_file(dir.file("long.gz"), gzip(idx_labels({1, 2}) + "xyz"));
  expect_mentions(labels_error(packed), packed, "more data than its header claims");
}

TEST(IdxFile, RefusesHugeClaimsBeforeAllocating) {
  ScratchDir dir;
  // 2^31 images of 1x1 in 100 bytes: refused from the file size, nothing allocated.
  const fs::path raw =
      write_file(dir.file("huge.idx"), idx_bytes(0x08, {1u << 31, 1, 1}, std::string(84, '\0')));
  expect_mentions(images_error(raw), raw, "truncated: its header claims 2147483648 images of 1x1 pixels");
  // The same in gzip: a 100-byte file inflates to at most ~100 KB.
  const fs::path packed =
      write_file(dir.file("huge.gz"), gzip(idx_bytes(0x08, {1u << 31, 1, 1}, std::string(60, '\0'))));
  expect_mentions(images_error(packed), packed, "can hold at most");
  // Over kiln's cap whatever the file: 4G images of 64K x 64K pixels.
  const fs::path absurd =
      write_file(dir.file("absurd.idx"), idx_bytes(0x08, {0xFFFFFFFF, 0xFFFF, 0xFFFF}, ""));
  expect_mentions(images_error(absurd), absurd, "more than kiln reads from an IDX file");
  const fs::path labels =
      write_file(dir.file("labels.idx"), idx_bytes(0x08, {0xFFFFFFFF}, std::string(88, '\1')));
  expect_mentions(labels_error(labels), labels, "4294967295 labels");
}

TEST(IdxFile, RefusesEmptySets) {
  ScratchDir dir;
  const fs::path none = write_file(dir.file("none.idx"), idx_bytes(0x08, {0, 28, 28}, ""));
  expect_mentions(images_error(none), none, "holds no images");
  const fs::path flat = write_file(dir.file("flat.idx"), idx_bytes(0x08, {3, 0, 28}, ""));
  expect_mentions(images_error(flat), flat, "0x28 pixels");
}

TEST(IdxFile, PairCountsMustMatch) {
  ScratchDir dir;
  const fs::path images_path = write_file(dir.file("i.idx"), idx_images(3, 2, 2));
  const fs::path labels_path = write_file(dir.file("l.idx"), idx_labels({1, 2}));
  const IdxImages images = read_idx_images(images_path);
  const IdxLabels labels = read_idx_labels(labels_path);
  try {
    check_idx_pair(images, images_path, labels, labels_path);
    FAIL() << "a mismatch passed";
  } catch (const Error& error) {
    expect_mentions(error.what(), labels_path,
                    "holds 2 labels but " + images_path.string() + " holds 3 images");
  }
}

}  // namespace
}  // namespace kiln
