// IDX files made in the tests: a header with any magic and sizes, known pixel and label bytes, and
// gzip compression through zlib, so that every reader check can be reached.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kiln::testing {

inline void put_be32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xFF);
}

// Magic 00 00 TYPE NDIMS, the sizes big-endian, then `data`.
inline std::string idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims,
                             const std::string& data) {
  std::string out = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (const std::uint32_t dim : dims) put_be32(out, dim);
  return out + data;
}

// Pixel i of image n is (n * 31 + i * 7) mod 256: every image differs, every byte value occurs.
inline std::string idx_pixels(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
  std::string data;
  for (std::uint32_t n = 0; n < count; ++n) {
    for (std::uint32_t i = 0; i < rows * cols; ++i) data += static_cast<char>((n * 31 + i * 7) % 256);
  }
  return data;
}

inline std::string idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
  return idx_bytes(0x08, {count, rows, cols}, idx_pixels(count, rows, cols));
}

inline std::string idx_labels(const std::vector<std::uint8_t>& labels) {
  return idx_bytes(0x08, {static_cast<std::uint32_t>(labels.size())},
                   std::string(labels.begin(), labels.end()));
}

// `data` as a gzip file (one member).
inline std::string gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace kiln::testing
