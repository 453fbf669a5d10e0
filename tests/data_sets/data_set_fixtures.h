// Fixtures for the dataset tests, made at run time: a small tar writer (ustar, GNU long names, pax
// paths), tiny PNG/JPEG/WebP images, and a scratch folder to lay datasets out in.
#pragma once

#include <gtest/gtest.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../io/image_test_files.h"

namespace kiln::testing {

namespace fs = std::filesystem;

inline const fs::path kPhotos = fs::path(KILN_TEST_DATA_DIR) / "photos";

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A w x h RGB image whose pixel (x, y) is (x * 40 + seed, y * 40, seed * 3), as PNG bytes.
inline std::string png_bytes(const fs::path& scratch, int w = 4, int h = 3, int seed = 0) {
  PngSpec spec = png_spec(w, h, 8, PNG_COLOR_TYPE_RGB);
  for (int y = 0; y < h; ++y) {
    std::vector<std::uint8_t> row;
    for (int x = 0; x < w; ++x) {
      row.push_back(static_cast<std::uint8_t>(x * 40 + seed));
      row.push_back(static_cast<std::uint8_t>(y * 40));
      row.push_back(static_cast<std::uint8_t>(seed * 3));
    }
    spec.rows.push_back(row);
  }
  const fs::path path = scratch / "fixture_tmp.png";
  write_png(path, spec);
  std::string bytes = read_text(path);
  fs::remove(path);
  return bytes;
}

inline std::string photo_bytes(const std::string& name = "dog.jpg") { return read_text(kPhotos / name); }

// Lossless WebP of `rgb` (w * h * 3 bytes), made with libwebp's encoder.
inline std::string webp_lossless_bytes(const std::vector<std::uint8_t>& rgb, int w, int h) {
  std::uint8_t* out = nullptr;
  const std::size_t size = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &out);
  std::string bytes(reinterpret_cast<const char*>(out), size);
  WebPFree(out);
  return bytes;
}

inline std::string webp_lossy_bytes(const std::vector<std::uint8_t>& rgb, int w, int h,
                                    float quality = 90.0f) {
  std::uint8_t* out = nullptr;
  const std::size_t size = WebPEncodeRGB(rgb.data(), w, h, w * 3, quality, &out);
  std::string bytes(reinterpret_cast<const char*>(out), size);
  WebPFree(out);
  return bytes;
}

// Writes tar archives block by block. Headers are POSIX ustar unless asked otherwise.
class TarWriter {
 public:
  static constexpr std::size_t kBlock = 512;

  // A regular file. A name over 100 bytes is split into the ustar prefix at a '/'.
  void add(const std::string& name, const std::string& data) {
    std::string stored = name;
    std::string prefix;
    if (name.size() > 100) {
      const std::size_t slash = name.rfind('/', name.size() - 1);
      prefix = name.substr(0, slash);
      stored = name.substr(slash + 1);
    }
    add_entry(stored, data, '0', prefix, false);
  }
  // A regular file whose name comes from a GNU 'L' entry; the header holds a truncated name.
  void add_gnu_long_name(const std::string& name, const std::string& data) {
    add_entry("././@LongLink", name + '\0', 'L', "", true);
    add_entry(name.substr(0, 99), data, '0', "", true);
  }
  // A regular file whose name comes from a pax 'x' header; the header holds `header_name`.
  void add_pax_path(const std::string& path, const std::string& header_name, const std::string& data) {
    std::string record = " path=" + path + "\n";
    std::size_t length = record.size() + 1;
    while (std::to_string(length).size() + record.size() != length) ++length;
    add_entry("PaxHeaders/" + header_name, std::to_string(length) + record, 'x', "", false);
    add_entry(header_name, data, '0', "", false);
  }
  void add_directory(const std::string& name) { add_entry(name, "", '5', "", false); }
  // A regular file with a base-256 size field, as GNU tar writes sizes over 8 GiB.
  void add_base256_size(const std::string& name, const std::string& data) {
    add_entry(name, data, '0', "", true, true);
  }

  // The archive, with the two zero blocks that end it unless `end_blocks` is false.
  std::string bytes(bool end_blocks = true) const {
    return end_blocks ? archive_ + std::string(2 * kBlock, '\0') : archive_;
  }
  void write(const fs::path& path, bool end_blocks = true) const { write_text(path, bytes(end_blocks)); }

  // Offset of the n-th header written (0-based), for tests that damage one.
  std::size_t header_offset(std::size_t n) const { return headers_.at(n); }

 private:
  static void put(std::string& block, std::size_t offset, const std::string& text) {
    std::memcpy(block.data() + offset, text.data(), text.size());
  }
  static std::string octal(std::uint64_t value, std::size_t digits) {
    std::string text(digits, '0');
    for (std::size_t i = digits; i-- > 0; value >>= 3) text[i] = static_cast<char>('0' + (value & 7));
    return text;
  }

  void add_entry(const std::string& name, const std::string& data, char type, const std::string& prefix,
                 bool gnu, bool base256 = false) {
    std::string block(kBlock, '\0');
    put(block, 0, name.substr(0, 100));
    put(block, 100, octal(0644, 7));
    put(block, 108, octal(0, 7));
    put(block, 116, octal(0, 7));
    if (base256) {
      block[124] = static_cast<char>(0x80);
      std::uint64_t size = data.size();
      for (std::size_t i = 11; i >= 4; --i, size >>= 8) block[124 + i] = static_cast<char>(size & 0xFF);
    } else {
      put(block, 124, octal(data.size(), 11));
    }
    put(block, 136, octal(1700000000, 11));
    block[156] = type;
    put(block, 257,
        gnu ? std::string("ustar  ", 8)
            : std::string("ustar\0"
                          "00",
                          8));
    if (!prefix.empty()) put(block, 345, prefix);
    put(block, 148, std::string(8, ' '));
    unsigned sum = 0;
    for (const char c : block) sum += static_cast<unsigned char>(c);
    put(block, 148, octal(sum, 6) + std::string("\0 ", 2));
    headers_.push_back(archive_.size());
    archive_ += block;
    archive_ += data;
    archive_.append((kBlock - data.size() % kBlock) % kBlock, '\0');
  }

  std::string archive_;
  std::vector<std::size_t> headers_;
};

}  // namespace kiln::testing
