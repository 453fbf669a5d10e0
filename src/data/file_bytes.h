// Reading a whole file or a byte range of one (a tar member) into memory, or a small text file whole.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// `size` bytes from `offset`, or the whole file when `size` is unset. `name` stands for what is read
// in error messages (a file, or a shard and member).
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path, std::uint64_t offset,
                                          std::optional<std::uint64_t> size, const std::string& name);

// A whole small text file (a label file, a data.yaml). Fails naming the file when it is no regular file,
// cannot be read, or holds more than `max_bytes` ("more than KIND holds").
std::string read_small_text_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                 const std::string& kind);

}  // namespace kiln
