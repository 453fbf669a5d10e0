// Reading a whole image file or a byte range of one (a tar member) into memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// `size` bytes from `offset`, or the whole file (at most kMaxImageFileBytes) when `size` is unset.
// `name` stands for what is read in error messages (a file, or a shard and member).
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path, std::uint64_t offset,
                                          std::optional<std::uint64_t> size, const std::string& name);

}  // namespace kiln
