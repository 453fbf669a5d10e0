#include "plan/plan_magic.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>

#include "plan/plan_format.h"

namespace kiln {

bool agrees_with_plan_magic(std::span<const std::byte> head) {
  const std::size_t length = std::min(head.size(), plan_format::kMagic.size());
  return std::memcmp(head.data(), plan_format::kMagic.data(), length) == 0;
}

bool looks_like_plan(const std::filesystem::path& path) {
  std::array<std::byte, plan_format::kMagic.size()> head{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  return in.gcount() == static_cast<std::streamsize>(head.size()) && agrees_with_plan_magic(head);
}

}  // namespace kiln
