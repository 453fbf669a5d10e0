// Files of one kind handed to a reader of another are named by what they are.
#include "io/file_kind.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "io/npy.h"
#include "io/safetensors.h"

namespace kiln {
namespace {

const std::filesystem::path kSeeds = std::filesystem::path(KILN_TEST_DATA_DIR) / "../fuzz/corpus";
const std::filesystem::path kGolden = std::filesystem::path(KILN_TEST_DATA_DIR) / "golden/resnet_tiny";

std::vector<std::uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

template <typename Read>
std::string error_of(Read&& read) {
  try {
    read();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(FileKind, SniffsEachKindFromItsFirstBytes) {
  EXPECT_EQ(sniff_file_kind(kSeeds / "jpeg/baseline.jpg"), FileKind::kJpeg);
  EXPECT_EQ(sniff_file_kind(kSeeds / "png/rgb.png"), FileKind::kPng);
  EXPECT_EQ(sniff_file_kind(kSeeds / "webp/lossless.webp"), FileKind::kWebp);
  EXPECT_EQ(sniff_file_kind(kSeeds / "plan_file/small.kplan"), FileKind::kPlan);
  EXPECT_EQ(sniff_file_kind(kSeeds / "webdataset/ustar.tar"), FileKind::kTar);
  EXPECT_EQ(sniff_file_kind(kGolden / "logits.npy"), FileKind::kNpy);
  EXPECT_EQ(sniff_file_kind(kGolden / "model.safetensors"), FileKind::kSafetensors);
  EXPECT_EQ(sniff_file_kind(kGolden / "config.json"), FileKind::kJson);
  EXPECT_EQ(sniff_file_kind(bytes_of("\x1F\x8B\x08\x00")), FileKind::kGzip);
  EXPECT_EQ(sniff_file_kind(bytes_of("PK\x03\x04rest")), FileKind::kZip);
  EXPECT_EQ(sniff_file_kind(bytes_of(" \n[1, 2]")), FileKind::kJson);
  EXPECT_EQ(sniff_file_kind(bytes_of("hello")), FileKind::kUnknown);
  EXPECT_EQ(sniff_file_kind(std::vector<std::uint8_t>{}), FileKind::kUnknown);
  EXPECT_EQ(sniff_file_kind(kSeeds / "absent.bin"), FileKind::kUnknown);
}

// A header length whose low byte is '{' (123) still reads as safetensors, not as JSON.
TEST(FileKind, SafetensorsLengthLookingLikeJsonText) {
  std::vector<std::uint8_t> head = {'{', 0, 0, 0, 0, 0, 0, 0, '{', '"'};
  EXPECT_EQ(sniff_file_kind(head), FileKind::kSafetensors);
  head = bytes_of(R"({"a": 1,{"b": 2})");
  EXPECT_EQ(sniff_file_kind(head), FileKind::kJson);
}

TEST(FileKind, SafetensorsReaderNamesTheFileKind) {
  const auto jpeg = kSeeds / "jpeg/baseline.jpg";
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(jpeg); }),
            jpeg.string() + ": this is a JPEG image, not a safetensors checkpoint");
  const auto plan = kSeeds / "plan_file/small.kplan";
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(plan); }),
            plan.string() + ": this is a kiln plan, not a safetensors checkpoint");
  const auto config = kGolden / "config.json";
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(config); }),
            config.string() + ": this is a JSON file, not a safetensors checkpoint");
}

TEST(FileKind, NpyReaderNamesTheFileKind) {
  const auto png = kSeeds / "png/rgb.png";
  EXPECT_EQ(error_of([&] { read_npy(png); }), png.string() + ": this is a PNG image, not a .npy array");
  const auto checkpoint = kGolden / "model.safetensors";
  EXPECT_EQ(error_of([&] { read_npy(checkpoint); }),
            checkpoint.string() + ": this is a safetensors checkpoint, not a .npy array");
}

TEST(FileKind, ImageDecoderNamesTheFileKind) {
  const auto plan = kSeeds / "plan_file/small.kplan";
  EXPECT_EQ(error_of([&] { decode_image(plan); }),
            plan.string() + ": this is a kiln plan, not a JPEG, PNG or WebP image");
  const auto npy = kGolden / "logits.npy";
  EXPECT_EQ(error_of([&] { decode_image(npy); }),
            npy.string() + ": this is a .npy array, not a JPEG, PNG or WebP image");
  const auto tar = kSeeds / "webdataset/ustar.tar";
  EXPECT_EQ(error_of([&] { decode_image(tar); }),
            tar.string() + ": this is a tar archive, not a JPEG, PNG or WebP image");
}

}  // namespace
}  // namespace kiln
