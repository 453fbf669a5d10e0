// resize_image / resize_crop: identities, values Pillow 9.4's Image.resize gives for small inputs,
// and the window computation agreeing with a crop of the full result.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/error.h"
#include "io/image.h"

namespace kiln {
namespace {

constexpr Interpolation kAll[] = {Interpolation::kBilinear, Interpolation::kBicubic, Interpolation::kNearest};

Image random_image(std::int64_t width, std::int64_t height, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> level(0, 255);
  Image image{width, height, {}};
  image.rgb.resize(static_cast<std::size_t>(width * height * 3));
  for (auto& v : image.rgb) v = static_cast<std::uint8_t>(level(rng));
  return image;
}

// One row of grey pixels.
Image grey_row(const std::vector<std::uint8_t>& values) {
  Image image{static_cast<std::int64_t>(values.size()), 1, {}};
  for (std::uint8_t v : values) image.rgb.resize(image.rgb.size() + 3, v);
  return image;
}

std::vector<std::uint8_t> red_channel(const Image& image) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < image.rgb.size(); i += 3) out.push_back(image.rgb[i]);
  return out;
}

TEST(ImageResize, SameSizeIsUnchanged) {
  const Image image = random_image(17, 11, 1);
  for (Interpolation interpolation : kAll) {
    const Image out = resize_image(image, 17, 11, interpolation);
    EXPECT_EQ(out.width, 17);
    EXPECT_EQ(out.height, 11);
    EXPECT_EQ(out.rgb, image.rgb);
  }
}

TEST(ImageResize, ConstantImageStaysConstant) {
  Image image{40, 30, std::vector<std::uint8_t>(40 * 30 * 3, 0)};
  for (std::size_t i = 0; i < image.rgb.size(); i += 3) {
    image.rgb[i] = 10;
    image.rgb[i + 1] = 128;
    image.rgb[i + 2] = 250;
  }
  for (Interpolation interpolation : kAll) {
    for (const auto& [w, h] : {std::pair{13, 7}, std::pair{40, 9}, std::pair{77, 30}, std::pair{91, 55}}) {
      const Image out = resize_image(image, w, h, interpolation);
      ASSERT_EQ(out.rgb.size(), static_cast<std::size_t>(w * h * 3));
      for (std::size_t i = 0; i < out.rgb.size(); i += 3) {
        ASSERT_EQ(out.rgb[i], 10);
        ASSERT_EQ(out.rgb[i + 1], 128);
        ASSERT_EQ(out.rgb[i + 2], 250);
      }
    }
  }
}

TEST(ImageResize, MatchesPillowOnSmallRows) {
  // Image.fromarray(row).resize(...) with Pillow 9.4.
  const Image row = grey_row({0, 100, 200, 255});
  EXPECT_EQ(red_channel(resize_image(row, 2, 1, Interpolation::kBilinear)),
            (std::vector<std::uint8_t>{71, 209}));
  EXPECT_EQ(red_channel(resize_image(row, 2, 1, Interpolation::kBicubic)),
            (std::vector<std::uint8_t>{60, 221}));
  EXPECT_EQ(red_channel(resize_image(row, 7, 1, Interpolation::kBicubic)),
            (std::vector<std::uint8_t>{0, 26, 92, 153, 206, 242, 255}));
  EXPECT_EQ(red_channel(resize_image(row, 7, 1, Interpolation::kNearest)),
            (std::vector<std::uint8_t>{0, 0, 100, 100, 200, 255, 255}));
}

TEST(ImageResize, NearestDoublingRepeatsPixels) {
  const Image image = random_image(5, 4, 2);
  const Image out = resize_image(image, 10, 8, Interpolation::kNearest);
  for (std::int64_t y = 0; y < 8; ++y) {
    for (std::int64_t x = 0; x < 10; ++x) {
      for (std::int64_t c = 0; c < 3; ++c) {
        ASSERT_EQ(out.rgb[static_cast<std::size_t>((y * 10 + x) * 3 + c)],
                  image.rgb[static_cast<std::size_t>(((y / 2) * 5 + x / 2) * 3 + c)]);
      }
    }
  }
}

TEST(ImageResize, UnchangedAxisIsNotResampled) {
  // Only the width changes: every output row depends on its own input row alone.
  const Image image = random_image(12, 6, 3);
  const Image out = resize_image(image, 5, 6, Interpolation::kBicubic);
  for (std::int64_t y = 0; y < 6; ++y) {
    Image row{12, 1, {}};
    row.rgb.assign(image.rgb.begin() + y * 36, image.rgb.begin() + (y + 1) * 36);
    const Image one = resize_image(row, 5, 1, Interpolation::kBicubic);
    EXPECT_TRUE(std::equal(one.rgb.begin(), one.rgb.end(), out.rgb.begin() + y * 15)) << "row " << y;
  }
}

TEST(ImageResize, WindowEqualsCropOfFullResize) {
  const Image image = random_image(37, 23, 4);
  for (Interpolation interpolation : kAll) {
    for (const auto& [w, h] : {std::pair{50, 31}, std::pair{19, 12}, std::pair{37, 40}, std::pair{60, 23}}) {
      const Image full = resize_image(image, w, h, interpolation);
      const CropWindow window{w / 5, h / 4, w / 2, h / 2};
      const Image part = resize_crop(image, w, h, interpolation, window);
      ASSERT_EQ(part.width, window.width);
      ASSERT_EQ(part.height, window.height);
      for (std::int64_t y = 0; y < window.height; ++y) {
        for (std::int64_t x = 0; x < window.width * 3; ++x) {
          ASSERT_EQ(part.rgb[static_cast<std::size_t>(y * window.width * 3 + x)],
                    full.rgb[static_cast<std::size_t>((y + window.top) * w * 3 + window.left * 3 + x)])
              << w << "x" << h << " at " << x / 3 << "," << y;
        }
      }
    }
  }
}

TEST(ImageResize, RejectsBadSizesAndWindows) {
  const Image image = random_image(4, 4, 5);
  EXPECT_THROW(resize_image(image, 0, 4, Interpolation::kBilinear), Error);
  EXPECT_THROW(resize_image(image, 4, -1, Interpolation::kBilinear), Error);
  EXPECT_THROW(resize_crop(image, 8, 8, Interpolation::kBilinear, CropWindow{4, 4, 5, 2}), Error);
  EXPECT_THROW(resize_image(Image{}, 4, 4, Interpolation::kBilinear), Error);
  Image inconsistent{4, 4, std::vector<std::uint8_t>(10)};
  EXPECT_THROW(resize_image(inconsistent, 2, 2, Interpolation::kBilinear), Error);
}

}  // namespace
}  // namespace kiln
