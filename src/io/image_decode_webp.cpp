// WebP through libwebp. Pillow opens a still WebP as one key frame decoded straight into RGBA (no
// blending), so its convert("RGB") gives the colour samples libwebp's RGB output gives: decoding
// to MODE_RGB with the default (fancy) upsampling matches it.
#include "io/image_decode_webp.h"

#ifdef KILN_HAVE_WEBP
#include <webp/decode.h>
#endif

#include <algorithm>
#include <array>

#include "core/error.h"

namespace kiln {

#ifdef KILN_HAVE_WEBP
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data";
  }
  return "unknown status";
}

[[noreturn]] void fail_status(const std::string& name, VP8StatusCode status) {
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) fail(name, ": truncated WebP file");
  fail(name, ": corrupt or unsupported WebP (", status_text(status), ")");
}

}  // namespace
#endif

bool is_webp(std::span<const std::uint8_t> bytes) {
  constexpr std::array<std::uint8_t, 4> kRiff{'R', 'I', 'F', 'F'};
  constexpr std::array<std::uint8_t, 4> kWebp{'W', 'E', 'B', 'P'};
  return bytes.size() >= 12 && std::equal(kRiff.begin(), kRiff.end(), bytes.begin()) &&
         std::equal(kWebp.begin(), kWebp.end(), bytes.begin() + 8);
}

#ifndef KILN_HAVE_WEBP
Image decode_webp(std::span<const std::uint8_t>, const std::string& name, std::uint64_t) {
  fail(name,
       ": this kiln was built without libwebp, so it cannot decode WebP images (install libwebp-dev and "
       "rebuild)");
}
#else
Image decode_webp(std::span<const std::uint8_t> bytes, const std::string& name, std::uint64_t max_pixels) {
  // RIFF's size field counts the bytes after it; a file shorter than it claims is truncated, refused
  // before the output is allocated (libwebp would take it as partial data).
  if (bytes.size() < 12) fail(name, ": truncated WebP file");
  const std::uint64_t riff_size = bytes[4] | bytes[5] << 8 | bytes[6] << 16 | std::uint64_t{bytes[7]} << 24;
  if (riff_size + 8 > bytes.size()) fail(name, ": truncated WebP file");
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail(name, ": libwebp version mismatch");
  VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &config.input);
  if (status != VP8_STATUS_OK) fail_status(name, status);
  const WebPBitstreamFeatures& features = config.input;
  if (features.has_animation) fail(name, ": animated WebP is not supported (expected a still image)");
  if (features.width <= 0 || features.height <= 0) fail(name, ": image has zero width or height");
  const auto width = static_cast<std::uint64_t>(features.width);
  const auto height = static_cast<std::uint64_t>(features.height);
  if (width * height > max_pixels) {
    fail(name, ": image of ", width, "x", height, " pixels exceeds the limit of ", max_pixels, " pixels");
  }

  Image image;
  image.width = features.width;
  image.height = features.height;
  image.rgb.resize(width * height * 3);
  // libwebp writes into our buffer, so nothing needs WebPFreeDecBuffer.
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.rgb.data();
  config.output.u.RGBA.stride = features.width * 3;
  config.output.u.RGBA.size = image.rgb.size();
  status = WebPDecode(bytes.data(), bytes.size(), &config);
  if (status != VP8_STATUS_OK) fail_status(name, status);
  return image;
}
#endif

}  // namespace kiln
