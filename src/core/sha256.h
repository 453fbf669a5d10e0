// SHA-256 (FIPS 180-4), for checkpoint digests recorded in plans and manifests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace kiln {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  std::array<std::uint8_t, 32> finish();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

std::string to_hex(std::span<const std::uint8_t> bytes);
std::string sha256_hex(std::span<const std::byte> data);
// Streams the file; fails naming it when it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace kiln
