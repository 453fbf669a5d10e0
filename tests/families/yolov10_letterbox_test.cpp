// kiln's letterbox against OpenCV's, byte for byte: tests/data/letterbox/letterbox_cv2.json holds what
// the YOLOv10 authors' LetterBox with cv2.resize(INTER_LINEAR) makes of every photo in tests/data/photos
// and of synthetic images of odd sizes (tools/goldens/letterbox_cv2.py made it; its OpenCV version is in
// the file).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "families/yolov10/letterbox.h"
#include "io/image.h"
#include "io/npy.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(KILN_TEST_DATA_DIR);

// The script's synthetic image: the low byte of ((x * 73856093) ^ (y * 19349663) ^ (c * 83492791)).
Image pattern(std::int64_t width, std::int64_t height) {
  Image image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width * height * 3))};
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      for (std::uint32_t c = 0; c < 3; ++c) {
        const std::uint32_t hash = (x * 73856093u) ^ (y * 19349663u) ^ (c * 83492791u);
        image.rgb[(y * width + x) * 3 + c] = static_cast<std::uint8_t>(hash & 0xFF);
      }
    }
  }
  return image;
}

std::string pixels_sha256(const Image& image) { return sha256_hex(std::as_bytes(std::span(image.rgb))); }

nlohmann::json golden() {
  std::ifstream file(kData / "letterbox" / "letterbox_cv2.json");
  return nlohmann::json::parse(file);
}

TEST(Yolov10Letterbox, MatchesOpenCvByteForByte) {
  const nlohmann::json reference = golden();
  ASSERT_GE(reference.at("cases").size(), 20u);
  for (const auto& entry : reference.at("cases")) {
    const std::string name = entry.at("name");
    const std::string source = entry.at("source");
    const Image image = source == "pattern"
                            ? pattern(entry.at("width"), entry.at("height"))
                            : decode_image(kData / "photos" / source.substr(std::string("photo:").size()));
    ASSERT_EQ(image.width, entry.at("width").get<std::int64_t>()) << name;
    ASSERT_EQ(image.height, entry.at("height").get<std::int64_t>()) << name;
    // The photo decoded as cv2.imread decodes it: otherwise a difference would not be the letterbox's.
    ASSERT_EQ(pixels_sha256(image), entry.at("source_sha256").get<std::string>()) << name << ": decoding";
    const Letterbox box = letterbox(image, entry.at("size"));
    EXPECT_EQ(box.left, entry.at("left").get<std::int64_t>()) << name;
    EXPECT_EQ(box.top, entry.at("top").get<std::int64_t>()) << name;
    EXPECT_EQ(pixels_sha256(box.image), entry.at("letterbox_sha256").get<std::string>()) << name;
    if (!entry.contains("npy")) continue;
    const Tensor expected = read_npy(kData / "letterbox" / entry.at("npy").get<std::string>());
    ASSERT_EQ(expected.nbytes(), box.image.rgb.size()) << name;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(expected.bytes());
    for (std::size_t i = 0; i < box.image.rgb.size(); ++i) {
      ASSERT_EQ(box.image.rgb[i], bytes[i]) << name << " byte " << i;
    }
  }
}

// Scaled-size rounding and pads as the authors' code: round() halves to even, pads round(d -+ 0.1).
TEST(Yolov10Letterbox, SizesAndPadsFollowTheAuthorsRounding) {
  const Letterbox wide = letterbox(pattern(300, 10), 640);
  EXPECT_EQ(wide.left, 0);
  EXPECT_EQ(wide.top, 309);  // 640 * 10 / 300 = 21.33 -> 21 rows; (640 - 21) / 2 = 309.5 -> 309 above
  EXPECT_EQ(wide.image.rgb[static_cast<std::size_t>((308 * 640) * 3)], kLetterboxGrey);
  EXPECT_EQ(wide.image.rgb[static_cast<std::size_t>((330 * 640) * 3)], kLetterboxGrey);
  const Letterbox same = letterbox(pattern(320, 320), 320);
  EXPECT_EQ(same.image.rgb, pattern(320, 320).rgb);
}

}  // namespace
}  // namespace kiln
