// decode_image: PNG colour types and depths as PIL's convert("RGB") maps them, JPEG grey/RGB/CMYK,
// format detection by content, and one-line errors for broken files.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "image_test_files.h"
#include "io/image.h"

namespace kiln {
namespace {

using testing::PngSpec;
using testing::ScratchDir;

std::vector<std::uint8_t> pixel(const Image& image, int x, int y) {
  const auto* p = &image.rgb[static_cast<std::size_t>((y * image.width + x) * 3)];
  return {p[0], p[1], p[2]};
}

std::vector<std::uint8_t> rgb(int r, int g, int b) {
  return {static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)};
}

// The message of the kiln::Error `decode_image(path)` throws; fails the test if it does not throw.
std::string decode_error(const std::filesystem::path& path) {
  try {
    decode_image(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "decode_image(" << path << ") did not throw";
  return "";
}

TEST(ImageDecode, Rgb8PngIsExact) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(3, 2, 8, PNG_COLOR_TYPE_RGB);
  spec.rows = {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {250, 251, 252, 0, 128, 255, 10, 20, 30}};
  testing::write_png(dir.file("a.png"), spec);
  const Image image = decode_image(dir.file("a.png"));
  EXPECT_EQ(image.width, 3);
  EXPECT_EQ(image.height, 2);
  EXPECT_EQ(image.rgb,
            (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251, 252, 0, 128, 255, 10, 20, 30}));
}

TEST(ImageDecode, InterlacedPngMatchesPlain) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(9, 5, 8, PNG_COLOR_TYPE_RGB);
  for (int y = 0; y < spec.height; ++y) {
    std::vector<std::uint8_t> row;
    for (int x = 0; x < spec.width * 3; ++x) row.push_back(static_cast<std::uint8_t>(y * 40 + x));
    spec.rows.push_back(row);
  }
  testing::write_png(dir.file("plain.png"), spec);
  spec.interlaced = true;
  testing::write_png(dir.file("adam7.png"), spec);
  EXPECT_EQ(decode_image(dir.file("plain.png")).rgb, decode_image(dir.file("adam7.png")).rgb);
}

TEST(ImageDecode, GreyPngIsReplicated) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(2, 1, 8, PNG_COLOR_TYPE_GRAY);
  spec.rows = {{7, 200}};
  testing::write_png(dir.file("g.png"), spec);
  const Image image = decode_image(dir.file("g.png"));
  EXPECT_EQ(image.rgb, (std::vector<std::uint8_t>{7, 7, 7, 200, 200, 200}));
}

TEST(ImageDecode, LowBitDepthGreyIsScaledToFullRange) {
  ScratchDir dir;
  // 1-bit: 0,1 -> 0,255; 2-bit: 0..3 -> multiples of 85; 4-bit: 0..15 -> multiples of 17.
  PngSpec one = testing::png_spec(2, 1, 1, PNG_COLOR_TYPE_GRAY);
  one.rows = {{0b01000000}};
  testing::write_png(dir.file("1.png"), one);
  EXPECT_EQ(decode_image(dir.file("1.png")).rgb, (std::vector<std::uint8_t>{0, 0, 0, 255, 255, 255}));

  PngSpec two = testing::png_spec(4, 1, 2, PNG_COLOR_TYPE_GRAY);
  two.rows = {{0b00011011}};
  testing::write_png(dir.file("2.png"), two);
  const Image image2 = decode_image(dir.file("2.png"));
  for (int x = 0; x < 4; ++x) EXPECT_EQ(pixel(image2, x, 0), rgb(85 * x, 85 * x, 85 * x));

  PngSpec four = testing::png_spec(2, 1, 4, PNG_COLOR_TYPE_GRAY);
  four.rows = {{0x3F}};
  testing::write_png(dir.file("4.png"), four);
  EXPECT_EQ(decode_image(dir.file("4.png")).rgb, (std::vector<std::uint8_t>{51, 51, 51, 255, 255, 255}));
}

TEST(ImageDecode, SixteenBitGreyIsClippedLikePil) {
  // PIL opens 16-bit grey as a 16-bit integer mode and convert("RGB") clips values above 255.
  ScratchDir dir;
  PngSpec spec = testing::png_spec(3, 1, 16, PNG_COLOR_TYPE_GRAY);
  spec.rows = {{0x00, 0x07, 0x00, 0xFF, 0x12, 0x34}};
  testing::write_png(dir.file("g16.png"), spec);
  EXPECT_EQ(decode_image(dir.file("g16.png")).rgb,
            (std::vector<std::uint8_t>{7, 7, 7, 255, 255, 255, 255, 255, 255}));
}

TEST(ImageDecode, SixteenBitColourKeepsHighByte) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(1, 1, 16, PNG_COLOR_TYPE_RGB);
  spec.rows = {{0x12, 0xFF, 0xAB, 0x00, 0x01, 0x80}};
  testing::write_png(dir.file("rgb16.png"), spec);
  EXPECT_EQ(decode_image(dir.file("rgb16.png")).rgb, rgb(0x12, 0xAB, 0x01));

  PngSpec rgba = testing::png_spec(1, 1, 16, PNG_COLOR_TYPE_RGB_ALPHA);
  rgba.rows = {{0x34, 0x01, 0x56, 0x02, 0x78, 0x03, 0x00, 0x00}};
  testing::write_png(dir.file("rgba16.png"), rgba);
  EXPECT_EQ(decode_image(dir.file("rgba16.png")).rgb, rgb(0x34, 0x56, 0x78));

  PngSpec ga = testing::png_spec(1, 1, 16, PNG_COLOR_TYPE_GRAY_ALPHA);
  ga.rows = {{0x9A, 0xFF, 0x10, 0x00}};
  testing::write_png(dir.file("ga16.png"), ga);
  EXPECT_EQ(decode_image(dir.file("ga16.png")).rgb, rgb(0x9A, 0x9A, 0x9A));
}

TEST(ImageDecode, AlphaIsDroppedWithoutPremultiplying) {
  ScratchDir dir;
  PngSpec rgba = testing::png_spec(2, 1, 8, PNG_COLOR_TYPE_RGB_ALPHA);
  rgba.rows = {{10, 20, 30, 0, 200, 100, 50, 128}};
  testing::write_png(dir.file("rgba.png"), rgba);
  EXPECT_EQ(decode_image(dir.file("rgba.png")).rgb, (std::vector<std::uint8_t>{10, 20, 30, 200, 100, 50}));

  PngSpec ga = testing::png_spec(2, 1, 8, PNG_COLOR_TYPE_GRAY_ALPHA);
  ga.rows = {{90, 0, 180, 255}};
  testing::write_png(dir.file("ga.png"), ga);
  EXPECT_EQ(decode_image(dir.file("ga.png")).rgb, (std::vector<std::uint8_t>{90, 90, 90, 180, 180, 180}));
}

TEST(ImageDecode, PaletteIsLookedUpAndTransparencyIgnored) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(3, 1, 8, PNG_COLOR_TYPE_PALETTE);
  spec.palette = {{255, 0, 0}, {0, 255, 0}, {1, 2, 3}};
  spec.palette_alpha = {0, 128};
  spec.rows = {{2, 0, 1}};
  testing::write_png(dir.file("p.png"), spec);
  EXPECT_EQ(decode_image(dir.file("p.png")).rgb, (std::vector<std::uint8_t>{1, 2, 3, 255, 0, 0, 0, 255, 0}));

  // 4-bit indices are unpacked before the lookup.
  PngSpec packed = testing::png_spec(2, 1, 4, PNG_COLOR_TYPE_PALETTE);
  packed.palette = {{9, 9, 9}, {4, 5, 6}};
  packed.rows = {{0x10}};
  testing::write_png(dir.file("p4.png"), packed);
  EXPECT_EQ(decode_image(dir.file("p4.png")).rgb, (std::vector<std::uint8_t>{4, 5, 6, 9, 9, 9}));
}

TEST(ImageDecode, PaletteIndexPastTheEndIsBlack) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(2, 1, 8, PNG_COLOR_TYPE_PALETTE);
  spec.palette = {{10, 20, 30}};
  spec.rows = {{0, 200}};
  testing::write_png(dir.file("p.png"), spec);
  EXPECT_EQ(decode_image(dir.file("p.png")).rgb, (std::vector<std::uint8_t>{10, 20, 30, 0, 0, 0}));
}

// 16x16 image of four flat 8x8 quadrants: each JPEG block is one colour, which quality 100 keeps
// within a level or two.
std::vector<std::uint8_t> quadrants(const std::vector<std::vector<std::uint8_t>>& colours) {
  const std::size_t components = colours[0].size();
  std::vector<std::uint8_t> samples;
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      const auto& c = colours[static_cast<std::size_t>((y / 8) * 2 + x / 8)];
      samples.insert(samples.end(), c.begin(), c.begin() + static_cast<std::ptrdiff_t>(components));
    }
  }
  return samples;
}

void expect_near(const std::vector<std::uint8_t>& actual, const std::vector<std::uint8_t>& expected,
                 int tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "channel " << i;
  }
}

TEST(ImageDecode, RgbJpegAtQuality100) {
  ScratchDir dir;
  const std::vector<std::vector<std::uint8_t>> colours = {
      {200, 30, 40}, {20, 220, 90}, {0, 0, 0}, {255, 255, 255}};
  testing::write_jpeg(dir.file("c.jpg"), 16, 16, 3, quadrants(colours));
  const Image image = decode_image(dir.file("c.jpg"));
  ASSERT_EQ(image.width, 16);
  ASSERT_EQ(image.height, 16);
  expect_near(pixel(image, 3, 3), colours[0], 3);
  expect_near(pixel(image, 12, 3), colours[1], 3);
  expect_near(pixel(image, 3, 12), colours[2], 3);
  expect_near(pixel(image, 12, 12), colours[3], 3);
}

TEST(ImageDecode, GreyJpegIsReplicated) {
  ScratchDir dir;
  testing::write_jpeg(dir.file("g.jpg"), 16, 16, 1, quadrants({{10}, {90}, {170}, {250}}));
  const Image image = decode_image(dir.file("g.jpg"));
  struct Probe {
    int x, y, v;
  };
  for (const Probe& probe : {Probe{3, 3, 10}, Probe{12, 3, 90}, Probe{3, 12, 170}, Probe{12, 12, 250}}) {
    const auto [x, y, v] = probe;
    const auto p = pixel(image, x, y);
    EXPECT_EQ(p[0], p[1]);
    EXPECT_EQ(p[1], p[2]);
    EXPECT_NEAR(p[0], v, 2);
  }
}

TEST(ImageDecode, CmykJpegIsInvertedAndConvertedLikePil) {
  // PIL reads CMYK JPEGs as Adobe-inverted: stored 255 means no ink. RGB = K' - K' * (255 - C') / 255
  // with C', K' the stored samples.
  ScratchDir dir;
  const std::vector<std::vector<std::uint8_t>> stored = {
      {255, 255, 255, 255},  // no ink: white
      {0, 255, 255, 255},    // full cyan: (0, 255, 255)
      {255, 255, 255, 0},    // full black
      {255, 128, 255, 200},  // some magenta and black
  };
  testing::write_jpeg(dir.file("cmyk.jpg"), 16, 16, 4, quadrants(stored));
  const Image image = decode_image(dir.file("cmyk.jpg"));
  expect_near(pixel(image, 3, 3), {255, 255, 255}, 2);
  expect_near(pixel(image, 12, 3), {0, 255, 255}, 2);
  expect_near(pixel(image, 3, 12), {0, 0, 0}, 2);
  // K' = 200: R = B = 200, G = 200 - round(127 * 200 / 255) = 100.
  expect_near(pixel(image, 12, 12), {200, 100, 200}, 3);
}

TEST(ImageDecode, FormatComesFromContentNotExtension) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(1, 1, 8, PNG_COLOR_TYPE_RGB);
  spec.rows = {{5, 6, 7}};
  testing::write_png(dir.file("really_a_png.jpg"), spec);
  EXPECT_EQ(decode_image(dir.file("really_a_png.jpg")).rgb, rgb(5, 6, 7));
  testing::write_jpeg(dir.file("really_a_jpeg.png"), 16, 16, 1, std::vector<std::uint8_t>(256, 128));
  EXPECT_NEAR(decode_image(dir.file("really_a_jpeg.png")).rgb[0], 128, 1);
}

TEST(ImageDecode, PhotosDecodeToTheirSizes) {
  const std::filesystem::path photos = std::filesystem::path(KILN_TEST_DATA_DIR) / "photos";
  const Image dog = decode_image(photos / "dog.jpg");
  EXPECT_EQ(dog.width, 768);
  EXPECT_EQ(dog.height, 576);
  EXPECT_EQ(dog.rgb.size(), 768u * 576u * 3u);
  const Image chelsea = decode_image(photos / "chelsea.png");
  EXPECT_EQ(chelsea.width, 451);
  EXPECT_EQ(chelsea.height, 300);
}

TEST(ImageDecode, MemoryAndFileAgree) {
  const std::filesystem::path path = std::filesystem::path(KILN_TEST_DATA_DIR) / "photos" / "butterfly.jpg";
  const std::vector<std::uint8_t> bytes = testing::read_bytes(path);
  EXPECT_EQ(decode_image_bytes(bytes, "butterfly").rgb, decode_image(path).rgb);
}

// ------------------------------------------------------------------------------------------ errors

// The CRC-32 that PNG chunks carry (reflected polynomial 0xEDB88320).
std::uint32_t crc32(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void expect_one_line_naming(const std::string& message, const std::filesystem::path& path,
                            const std::string& what) {
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ImageDecodeErrors, EmptyFile) {
  ScratchDir dir;
  testing::write_bytes(dir.file("empty.jpg"), {});
  expect_one_line_naming(decode_error(dir.file("empty.jpg")), dir.file("empty.jpg"), "empty file");
}

TEST(ImageDecodeErrors, TextFileNamedJpg) {
  ScratchDir dir;
  const std::string text = "this is not an image\n";
  testing::write_bytes(dir.file("notes.jpg"), std::vector<std::uint8_t>(text.begin(), text.end()));
  expect_one_line_naming(decode_error(dir.file("notes.jpg")), dir.file("notes.jpg"), "not a JPEG, PNG or WebP");
}

TEST(ImageDecodeErrors, TruncatedJpeg) {
  ScratchDir dir;
  const auto photo = testing::read_bytes(std::filesystem::path(KILN_TEST_DATA_DIR) / "photos" / "dog.jpg");
  for (std::size_t keep :
       {std::size_t{3}, std::size_t{200}, std::size_t{5000}, photo.size() / 2, photo.size() - 2}) {
    testing::write_bytes(
        dir.file("cut.jpg"),
        std::vector<std::uint8_t>(photo.begin(), photo.begin() + static_cast<std::ptrdiff_t>(keep)));
    expect_one_line_naming(decode_error(dir.file("cut.jpg")), dir.file("cut.jpg"), "truncated JPEG");
  }
}

TEST(ImageDecodeErrors, CorruptJpeg) {
  ScratchDir dir;
  auto photo = testing::read_bytes(std::filesystem::path(KILN_TEST_DATA_DIR) / "photos" / "dog.jpg");
  // Overwrite the start of the headers after the SOI marker with garbage markers.
  for (std::size_t i = 2; i < 64; ++i) photo[i] = i % 2 == 0 ? 0xFF : 0xBA;
  testing::write_bytes(dir.file("bad.jpg"), photo);
  expect_one_line_naming(decode_error(dir.file("bad.jpg")), dir.file("bad.jpg"),
                         "corrupt or unsupported JPEG");
}

TEST(ImageDecodeErrors, TruncatedPng) {
  ScratchDir dir;
  const auto photo =
      testing::read_bytes(std::filesystem::path(KILN_TEST_DATA_DIR) / "photos" / "chelsea.png");
  for (std::size_t keep : {std::size_t{8}, std::size_t{30}, std::size_t{6000}, photo.size() / 2}) {
    testing::write_bytes(
        dir.file("cut.png"),
        std::vector<std::uint8_t>(photo.begin(), photo.begin() + static_cast<std::ptrdiff_t>(keep)));
    expect_one_line_naming(decode_error(dir.file("cut.png")), dir.file("cut.png"), "truncated PNG");
  }
}

TEST(ImageDecodeErrors, PngChecksumMismatch) {
  ScratchDir dir;
  auto photo = testing::read_bytes(std::filesystem::path(KILN_TEST_DATA_DIR) / "photos" / "chelsea.png");
  photo[100] ^= 0xFF;  // inside the data of the iCCP chunk that follows IHDR
  testing::write_bytes(dir.file("crc.png"), photo);
  expect_one_line_naming(decode_error(dir.file("crc.png")), dir.file("crc.png"), "CRC error");
}

TEST(ImageDecodeErrors, HugePngHeaderIsRefusedBeforeAllocating) {
  ScratchDir dir;
  PngSpec spec = testing::png_spec(1, 1, 8, PNG_COLOR_TYPE_GRAY);
  spec.rows = {{0}};
  testing::write_png(dir.file("tiny.png"), spec);
  auto bytes = testing::read_bytes(dir.file("tiny.png"));
  // Patch IHDR to 100000 x 100000 and fix its CRC.
  const std::uint8_t size[4] = {0x00, 0x01, 0x86, 0xA0};
  std::copy(size, size + 4, bytes.begin() + 16);
  std::copy(size, size + 4, bytes.begin() + 20);
  const std::uint32_t crc = crc32(bytes.data() + 12, 17);
  for (int i = 0; i < 4; ++i)
    bytes[29 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  testing::write_bytes(dir.file("huge.png"), bytes);
  expect_one_line_naming(decode_error(dir.file("huge.png")), dir.file("huge.png"), "exceeds the limit");
}

TEST(ImageDecodeErrors, MissingFileAndDirectory) {
  ScratchDir dir;
  expect_one_line_naming(decode_error(dir.file("absent.jpg")), dir.file("absent.jpg"), "cannot open");
  expect_one_line_naming(decode_error(dir.file("")), dir.file(""), "is a folder, not a regular file");
}

}  // namespace
}  // namespace kiln
