#include "plan/plan_magic.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>

#include "core/regular_file.h"
#include "plan/plan_format.h"

namespace kiln {

bool agrees_with_plan_magic(std::span<const std::byte> head) {
  const std::size_t length = std::min(head.size(), plan_format::kMagic.size());
  return std::memcmp(head.data(), plan_format::kMagic.data(), length) == 0;
}

bool looks_like_plan(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return false;  // the caller's reader names the missing file
  // A FIFO or a device is neither a plan nor anything else kiln reads: refused here, before an open
  // that would wait for a writer.
  const RegularFile file = RegularFile::open(path);
  std::array<std::byte, plan_format::kMagic.size()> head{};
  return file.read_at(0, head.data(), head.size()) == head.size() && agrees_with_plan_magic(head);
}

}  // namespace kiln
