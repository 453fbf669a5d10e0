// Telling a plan file from other files by its first bytes, the magic "KILNPLAN" (plan_format.h).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace kiln {

// True when `head`, a file's first bytes, agrees with the magic over their common length: a file
// shorter than the magic may still be a truncated plan.
bool agrees_with_plan_magic(std::span<const std::byte> head);

// True when the file starts with the whole magic; false when it is shorter or absent. Fails naming the
// path when it exists but is no regular file (a folder, a FIFO, a device).
bool looks_like_plan(const std::filesystem::path& path);

}  // namespace kiln
