// WebP through decode_image: lossless files decode exactly, lossy ones closely, and broken ones give
// one-line errors naming the file. The files are made with libwebp's encoder.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "data_set_fixtures.h"
#include "io/image.h"

namespace kiln {
namespace {

using testing::ScratchDir;

std::vector<std::uint8_t> gradient(int w, int h) {
  std::vector<std::uint8_t> rgb;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      rgb.push_back(static_cast<std::uint8_t>(x * 255 / (w - 1)));
      rgb.push_back(static_cast<std::uint8_t>(y * 255 / (h - 1)));
      rgb.push_back(static_cast<std::uint8_t>((x + y) * 7));
    }
  }
  return rgb;
}

std::string decode_error(const std::filesystem::path& path) {
  try {
    decode_image(path);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "decode_image(" << path << ") did not throw";
  return "";
}

TEST(WebpDecode, LosslessIsExact) {
  ScratchDir dir;
  const auto rgb = gradient(5, 3);
  testing::write_text(dir.file("tiny.webp"), testing::webp_lossless_bytes(rgb, 5, 3));
  const Image image = decode_image(dir.file("tiny.webp"));
  EXPECT_EQ(image.width, 5);
  EXPECT_EQ(image.height, 3);
  EXPECT_EQ(image.rgb, rgb);
}

TEST(WebpDecode, LossyIsClose) {
  ScratchDir dir;
  const auto rgb = gradient(32, 24);
  const std::string bytes = testing::webp_lossy_bytes(rgb, 32, 24, 95.0f);
  const Image image =
      decode_image_bytes({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, "mem");
  ASSERT_EQ(image.width, 32);
  ASSERT_EQ(image.height, 24);
  double total_error = 0;
  for (std::size_t i = 0; i < rgb.size(); ++i) total_error += std::abs(int(image.rgb[i]) - int(rgb[i]));
  EXPECT_LT(total_error / static_cast<double>(rgb.size()), 8.0);
}

TEST(WebpDecode, BrokenFilesNameTheFile) {
  ScratchDir dir;
  const std::string bytes = testing::webp_lossy_bytes(gradient(32, 24), 32, 24);
  testing::write_text(dir.file("cut.webp"), bytes.substr(0, bytes.size() / 2));
  std::string message = decode_error(dir.file("cut.webp"));
  EXPECT_NE(message.find(dir.file("cut.webp").string()), std::string::npos) << message;
  EXPECT_NE(message.find("WebP"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;

  std::string garbage = bytes.substr(0, 12) + std::string(200, '\x55');
  testing::write_text(dir.file("garbage.webp"), garbage);
  message = decode_error(dir.file("garbage.webp"));
  EXPECT_NE(message.find(dir.file("garbage.webp").string()), std::string::npos) << message;
  EXPECT_NE(message.find("WebP"), std::string::npos) << message;

  testing::write_text(dir.file("header.webp"), bytes.substr(0, 12));
  message = decode_error(dir.file("header.webp"));
  EXPECT_NE(message.find("header.webp"), std::string::npos) << message;
}

TEST(WebpDecode, RiffThatIsNotWebp) {
  ScratchDir dir;
  testing::write_text(dir.file("sound.webp"), std::string("RIFF\x10\0\0\0WAVEfmt ", 16));
  const std::string message = decode_error(dir.file("sound.webp"));
  EXPECT_NE(message.find("not a JPEG, PNG or WebP"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln
