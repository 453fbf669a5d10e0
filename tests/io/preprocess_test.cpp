// preprocess_image / eval_resize_crop: sizes, torchvision's resize and crop-offset rules, and the
// ToTensor + Normalize arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "io/image.h"

namespace kiln {
namespace {

// Red = column index (mod 256), green = row index, blue = 7.
Image coordinate_image(std::int64_t width, std::int64_t height) {
  Image image{width, height, {}};
  for (std::int64_t y = 0; y < height; ++y) {
    for (std::int64_t x = 0; x < width; ++x) {
      image.rgb.insert(image.rgb.end(), {static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y), 7});
    }
  }
  return image;
}

PreprocessConfig config(std::int64_t size, double crop_pct) {
  PreprocessConfig c;
  c.input_size = size;
  c.crop_pct = crop_pct;
  return c;
}

TEST(Preprocess, OutputIsChwFloatOfInputSize) {
  const Tensor t = preprocess_image(coordinate_image(300, 200), config(64, 0.875));
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.shape(), (Shape{3, 64, 64}));
}

TEST(Preprocess, CenterCropRoundsHalfOffsetsToEven) {
  // crop_pct 1 and a short side equal to the size: no resampling, only the crop. torchvision's
  // offsets are int(round((W - size) / 2)) with Python's round: 16.5 -> 16, 17.5 -> 18.
  const PreprocessConfig c = config(224, 1.0);
  EXPECT_EQ(eval_resize_crop(coordinate_image(257, 224), c).rgb[0], 16);
  EXPECT_EQ(eval_resize_crop(coordinate_image(259, 224), c).rgb[0], 18);
  EXPECT_EQ(eval_resize_crop(coordinate_image(260, 224), c).rgb[0], 18);
  // Same rule vertically (green holds the row).
  EXPECT_EQ(eval_resize_crop(coordinate_image(224, 257), c).rgb[1], 16);
}

TEST(Preprocess, ShorterSideGoesToFloorOfSizeOverCropPct) {
  // 224 / 0.95 = 235.79 -> 235: a 235-pixel short side is left as is and only cropped.
  const Image image = coordinate_image(240, 235);
  const Image crop = eval_resize_crop(image, config(224, 0.95));
  EXPECT_EQ(crop.width, 224);
  EXPECT_EQ(crop.height, 224);
  // 235 rows -> 224: offset round(5.5) = 6; 240 columns unchanged: offset 8.
  EXPECT_EQ(crop.rgb[0], 8);
  EXPECT_EQ(crop.rgb[1], 6);
}

TEST(Preprocess, NormalizesLikeToTensorAndNormalize) {
  Image flat{300, 300, std::vector<std::uint8_t>(300 * 300 * 3)};
  for (std::size_t i = 0; i < flat.rgb.size(); i += 3) {
    flat.rgb[i] = 0;
    flat.rgb[i + 1] = 128;
    flat.rgb[i + 2] = 255;
  }
  PreprocessConfig c = config(32, 0.875);
  const Tensor t = preprocess_image(flat, c);
  const auto values = t.f32();
  const std::int64_t plane = 32 * 32;
  for (int ch = 0; ch < 3; ++ch) {
    const float level = ch == 0 ? 0.0f : ch == 1 ? 128.0f : 255.0f;
    const float expected = (level / 255.0f - c.mean[ch]) / c.std[ch];
    EXPECT_EQ(values[static_cast<std::size_t>(ch * plane)], expected);
    EXPECT_EQ(values[static_cast<std::size_t>(ch * plane + plane - 1)], expected);
  }
}

TEST(Preprocess, RejectsUnsupportedSettings) {
  const Image image = coordinate_image(50, 50);
  PreprocessConfig squash = config(32, 0.875);
  squash.crop_mode = "squash";
  EXPECT_THROW(preprocess_image(image, squash), Error);
  EXPECT_THROW(preprocess_image(image, config(32, 0.0)), Error);
  EXPECT_THROW(preprocess_image(image, config(32, 1.5)), Error);
  EXPECT_THROW(preprocess_image(image, config(0, 0.9)), Error);
  PreprocessConfig zero_std = config(32, 0.9);
  zero_std.std[1] = 0.0f;
  EXPECT_THROW(preprocess_image(image, zero_std), Error);
  EXPECT_THROW(preprocess_image(Image{}, config(32, 0.9)), Error);
}

}  // namespace
}  // namespace kiln
