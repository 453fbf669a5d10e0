// What every fuzz target shares: the input written to a file (kiln's readers take paths), and the rule
// each target checks: a reader either returns or throws kiln::Error. Any other exception escapes
// LLVMFuzzerTestOneInput and libFuzzer reports it, as it reports crashes, sanitizer findings and
// allocations beyond -malloc_limit_mb.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include "core/error.h"

namespace kiln::fuzz {

// The input as a file named `name` in a folder of this process's own, rewritten for every input.
inline std::filesystem::path write_input(std::span<const std::uint8_t> data, std::string_view name) {
  static const std::filesystem::path dir = [] {
    auto path = std::filesystem::temp_directory_path() / ("kiln-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  const std::filesystem::path path = dir / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return path;
}

inline std::span<const std::uint8_t> bytes(const std::uint8_t* data, std::size_t size) {
  return {data, size};
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs one parse; kiln::Error is the expected way to refuse an input, and its message must be one line.
template <typename Parse>
void expect_result_or_error(Parse&& parse) {
  try {
    parse();
  } catch (const Error& error) {
    if (std::string_view(error.what()).find('\n') != std::string_view::npos) {
      std::fprintf(stderr, "kiln::Error message of more than one line:\n%s\n", error.what());
      __builtin_trap();
    }
  }
}

}  // namespace kiln::fuzz
