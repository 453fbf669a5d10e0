// A small file whose header claims a huge image is refused before the decoder allocates for that
// size: each test runs under an address-space limit far below what the claimed image would take.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"

namespace kiln {
namespace {

const std::filesystem::path kSeeds = std::filesystem::path(KILN_TEST_DATA_DIR) / "../fuzz/corpus";

std::vector<std::uint8_t> read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Lowers this process's address-space limit to what it uses now plus `headroom` (ctest runs each test
// in a process of its own). Sanitizers reserve terabytes of shadow memory, so there it is skipped.
bool limit_memory(std::uint64_t headroom) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return false;
#endif
#endif
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  const rlim_t limit = pages * 4096 + headroom;
  const rlimit wanted{limit, limit};
  return setrlimit(RLIMIT_AS, &wanted) == 0;
}

constexpr std::uint64_t kHeadroom = 256ull << 20;

std::string decode_error(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  try {
    decode_image_bytes(bytes, name);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << name << " decoded";
  return "";
}

void put_be16(std::vector<std::uint8_t>& bytes, std::size_t at, std::uint32_t value) {
  bytes[at] = static_cast<std::uint8_t>(value >> 8);
  bytes[at + 1] = static_cast<std::uint8_t>(value);
}

// The JPEG seed with its frame header (SOF0 or SOF2) claiming width x height.
std::vector<std::uint8_t> jpeg_claiming(const std::string& seed, std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> bytes = read_all(kSeeds / "jpeg" / seed);
  for (std::size_t i = 2; i + 9 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && (bytes[i + 1] == 0xC0 || bytes[i + 1] == 0xC2)) {
      put_be16(bytes, i + 5, height);
      put_be16(bytes, i + 7, width);
      return bytes;
    }
  }
  ADD_FAILURE() << seed << " has no frame header";
  return bytes;
}

TEST(ImageDecodeBounds, ProgressiveJpegClaimingAHugeImage) {
  const std::vector<std::uint8_t> bytes = jpeg_claiming("progressive.jpg", 9000, 9900);
  ASSERT_LT(bytes.size(), 2000u);
  if (!limit_memory(kHeadroom)) GTEST_SKIP() << "no address-space limit under a sanitizer";
  const std::string message = decode_error(bytes, "big.jpg");
  EXPECT_EQ(message, "big.jpg: truncated JPEG file");
}

TEST(ImageDecodeBounds, BaselineJpegClaimingAHugeImage) {
  const std::vector<std::uint8_t> bytes = jpeg_claiming("baseline.jpg", 9000, 9900);
  if (!limit_memory(kHeadroom)) GTEST_SKIP() << "no address-space limit under a sanitizer";
  EXPECT_EQ(decode_error(bytes, "big.jpg"), "big.jpg: truncated JPEG file");
}

// 69 bytes: the signature, an IHDR for 9400 x 9400 16-bit RGBA (707 MB of rows) and the start of
// an IDAT chunk.
TEST(ImageDecodeBounds, PngHeaderClaimingAHugeImage) {
  std::vector<std::uint8_t> bytes = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n',
                                     0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  for (const std::uint32_t side : {9400u, 9400u}) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(side >> shift));
  }
  bytes.insert(bytes.end(), {16, 6, 0, 0, 0});
  const auto crc = static_cast<std::uint32_t>(crc32(0, bytes.data() + 12, 17));
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(crc >> shift));
  bytes.insert(bytes.end(), {0, 0, 0x10, 0, 'I', 'D', 'A', 'T', 0x78, 0x9C});
  bytes.resize(69, 0);
  if (!limit_memory(kHeadroom)) GTEST_SKIP() << "no address-space limit under a sanitizer";
  const std::string message = decode_error(bytes, "big.png");
  EXPECT_TRUE(message.starts_with("big.png: truncated PNG file")) << message;
}

TEST(ImageDecodeBounds, TruncatedWebpIsRefusedBeforeDecoding) {
#ifndef KILN_HAVE_WEBP
  GTEST_SKIP() << "built without libwebp";
#endif
  std::vector<std::uint8_t> bytes = read_all(kSeeds / "webp" / "lossy.webp");
  bytes.resize(bytes.size() - 1);
  EXPECT_EQ(decode_error(bytes, "cut.webp"), "cut.webp: truncated WebP file");
}

// Found by fuzzing: WebP files of 31 and 72 bytes whose lossless (VP8L) headers claim 14592x9216 and
// 16373x9212 pixels made kiln and libwebp allocate 540-600 MB before finding the data missing.
TEST(ImageDecodeBounds, TinyWebpClaimingAHugeImageIsRefusedBeforeDecoding) {
#ifndef KILN_HAVE_WEBP
  GTEST_SKIP() << "built without libwebp";
#endif
  const std::vector<std::uint8_t> headerless = {
      0x52, 0x49, 0x46, 0x46, 0x0d, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x2f, 0xff, 0xf8, 0xff,
      0x08, 0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x8c, 0x3d, 0x00, 0x00, 0x00, 0xff, 0x6f};
  const std::vector<std::uint8_t> lossless = {
      0x52, 0x49, 0x46, 0x46, 0x40, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x4c,
      0x33, 0x00, 0x00, 0x00, 0x2f, 0xf4, 0xff, 0xfe, 0x08, 0xcd, 0x64, 0x44, 0xff, 0x63, 0x53, 0xf0,
      0x28, 0x78, 0xff, 0xc3, 0xa0, 0xa0, 0x6d, 0x1b, 0xa6, 0x40, 0x36, 0xfe, 0x48, 0xff, 0x06, 0xa0,
      0x15, 0x08, 0xa4, 0x30, 0x87, 0xef, 0x41, 0x90, 0x4d, 0xda, 0x64, 0x4b, 0xda, 0x4b, 0x88, 0x30,
      0xa5, 0xf0, 0x33, 0x03, 0xdc, 0x2f, 0x11, 0x00};
  if (!limit_memory(kHeadroom)) GTEST_SKIP() << "no address-space limit under a sanitizer";
  EXPECT_EQ(decode_error(headerless, "a.webp"),
            "a.webp: image of 14592x9216 pixels exceeds the limit of 89478485 pixels");
  EXPECT_EQ(decode_error(lossless, "b.webp"),
            "b.webp: image of 16373x9212 pixels exceeds the limit of 89478485 pixels");
}

// The seeds themselves decode (the bounds leave real files alone).
TEST(ImageDecodeBounds, SmallImagesStillDecode) {
  std::vector<std::string> seeds = {"jpeg/baseline.jpg", "jpeg/progressive.jpg", "jpeg/grey.jpg",
                                    "png/rgb.png"};
#ifdef KILN_HAVE_WEBP
  seeds.insert(seeds.end(), {"webp/lossy.webp", "webp/lossless.webp"});
#endif
  for (const std::string& seed : seeds) {
    const Image image = decode_image(kSeeds / seed);
    EXPECT_EQ(image.width, 13) << seed;
    EXPECT_EQ(image.height, 9) << seed;
  }
}

}  // namespace
}  // namespace kiln
