// Image decoding (JPEG through libjpeg-turbo, PNG through libpng, WebP through libwebp) and timm's
// eval transform: resize the shorter side to floor(size / crop_pct) with the configured interpolation,
// center crop to size x size, scale to [0, 1], normalize with mean/std. Matches torchvision's PIL path
// (antialiased resampling, PIL's rounding to uint8 after resize).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/resample_tables.h"
#include "io/timm_config.h"

namespace kiln {

struct Image {
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::vector<std::uint8_t> rgb;  // height * width * 3, row-major
};

// The largest image file kiln reads: every pixel it decodes (PIL's MAX_IMAGE_PIXELS, 89,478,485) at
// 8 bytes (16-bit RGBA), uncompressed.
inline constexpr std::uint64_t kMaxImageFileBytes = 89478485ull * 8;

// Fails with "<path>: ..." on unreadable, truncated or unsupported files. Grey and alpha are
// converted to RGB (alpha dropped), as PIL's convert("RGB") does.
Image decode_image(const std::filesystem::path& path);
// The same for bytes already in memory; `name` stands for the file in error messages. The format is
// taken from the leading bytes, never from a file name.
Image decode_image_bytes(std::span<const std::uint8_t> bytes, const std::string& name);

// Writes 8-bit RGB as PNG, atomically (a temp file renamed over `path`).
void write_png(const std::filesystem::path& path, const Image& image);

// 8-bit grey pixels (width * height bytes, row-major) as the bytes of a grey 8-bit PNG. `name` stands
// for the image in error messages.
std::vector<std::uint8_t> encode_grey_png(std::span<const std::uint8_t> pixels, std::int64_t width,
                                          std::int64_t height, const std::string& name);

// PIL-compatible resize of 8-bit RGB (Image.resize with BILINEAR/BICUBIC/NEAREST and its support
// scaling when downsampling), result rounded and clamped to uint8.
Image resize_image(const Image& image, std::int64_t width, std::int64_t height, Interpolation interpolation);

// Equal to cropping resize_image(image, width, height, interpolation) to `window`, but only the
// window's pixels are computed. The window must lie inside width x height.
Image resize_crop(const Image& image, std::int64_t width, std::int64_t height, Interpolation interpolation,
                  const CropWindow& window);

// The 8-bit part of the eval transform: torchvision's Resize(floor(size / crop_pct)) of the shorter
// side and CenterCrop(size). Returns a size x size RGB image.
Image eval_resize_crop(const Image& image, const PreprocessConfig& config);

// The full eval transform; returns a [3, size, size] float32 tensor.
Tensor preprocess_image(const Image& image, const PreprocessConfig& config);

}  // namespace kiln
