// Helpers for the file-format tests: a unique temporary folder, raw file I/O, hand-built
// safetensors files and a check that a call fails with a kiln::Error mentioning given words.
// (The npy and atomic_file tests use TempDir and the file helpers too.)
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/error.h"

namespace kiln::test {

// A fresh folder under the system temp folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<unsigned> counter{0};
    std::random_device entropy;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = std::filesystem::temp_directory_path() /
              ("kiln-io-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
               std::to_string(entropy()));
      if (std::filesystem::create_directory(path_)) return;
    }
    throw std::runtime_error("cannot create a temporary test folder");
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Names of the entries in the folder.
  std::set<std::string> list() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.insert(entry.path().filename());
    }
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  // Remove rather than truncate: ext4 flushes a file truncated and rewritten in place to disk, which
  // makes loops over thousands of damaged files slow.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write test file " + path.string());
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read test file " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string le64(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xFFu);
  return bytes;
}

// 8-byte little-endian header length, the header exactly as given, then the data.
inline std::string safetensors_bytes(std::string_view header, std::string_view data) {
  return le64(header.size()) + std::string(header) + std::string(data);
}

// Succeeds when `call` throws kiln::Error with a one-line message containing every needle.
template <typename Call>
::testing::AssertionResult fails_with(Call&& call, std::initializer_list<std::string_view> needles) {
  try {
    call();
  } catch (const Error& error) {
    const std::string message = error.what();
    if (message.find('\n') != std::string::npos) {
      return ::testing::AssertionFailure() << "message spans several lines: " << message;
    }
    for (const auto needle : needles) {
      if (message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure() << "message lacks '" << needle << "': " << message;
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& error) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << error.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace kiln::test
