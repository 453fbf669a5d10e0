// WebP decoding, reached through decode_image_bytes() when the bytes start with "RIFF....WEBP".
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "io/image.h"

namespace kiln {

// True for a RIFF container of type WEBP (the first 12 bytes).
bool is_webp(std::span<const std::uint8_t> bytes);

// Decodes a still WebP (lossy or lossless) to 8-bit RGB, alpha dropped; images over `max_pixels`
// are refused before decoding. Errors are kiln::Error "<name>: ...".
Image decode_webp(std::span<const std::uint8_t> bytes, const std::string& name, std::uint64_t max_pixels);

}  // namespace kiln
