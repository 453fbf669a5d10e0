// PNG output through libpng's simplified API: images kiln draws (detections) and grey images it
// writes into datasets.
#include <png.h>

#include <cstring>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/image.h"

namespace kiln {

void write_png(const std::filesystem::path& path, const Image& image) {
  require(image.width > 0 && image.height > 0 &&
              image.rgb.size() == static_cast<std::size_t>(image.width * image.height * 3),
          path.string(), ": no image to write");
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  require(png_image_write_to_memory(&png, nullptr, &size, 0, image.rgb.data(), 0, nullptr) != 0,
          path.string(), ": cannot encode PNG (", png.message, ")");
  std::vector<char> bytes(size);
  require(png_image_write_to_memory(&png, bytes.data(), &size, 0, image.rgb.data(), 0, nullptr) != 0,
          path.string(), ": cannot encode PNG (", png.message, ")");
  write_file_atomically(
      path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(size)); });
}

std::vector<std::uint8_t> encode_grey_png(std::span<const std::uint8_t> pixels, std::int64_t width,
                                          std::int64_t height, const std::string& name) {
  require(width > 0 && height > 0 && pixels.size() == static_cast<std::size_t>(width * height), name,
          ": no grey image to encode (", width, "x", height, ", ", pixels.size(), " bytes)");
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(width);
  png.height = static_cast<png_uint_32>(height);
  png.format = PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  require(png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr) != 0, name,
          ": cannot encode PNG (", png.message, ")");
  std::vector<std::uint8_t> bytes(size);
  require(png_image_write_to_memory(&png, bytes.data(), &size, 0, pixels.data(), 0, nullptr) != 0, name,
          ": cannot encode PNG (", png.message, ")");
  bytes.resize(size);
  return bytes;
}

}  // namespace kiln
