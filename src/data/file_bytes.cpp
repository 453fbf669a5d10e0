#include "data/file_bytes.h"

#include "core/error.h"
#include "core/regular_file.h"
#include "io/image.h"

namespace kiln {

std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path, std::uint64_t offset,
                                          std::optional<std::uint64_t> size, const std::string& name) {
  const RegularFile file = RegularFile::open(path, name);
  if (!size) {
    file.require_at_most(kMaxImageFileBytes, "an image kiln decodes");
    size = file.size();
  }
  std::vector<std::uint8_t> bytes(*size);
  const std::size_t got = file.read_at(offset, bytes.data(), bytes.size());
  if (got != *size) {
    fail(name, ": read ", got, " of ", *size, " bytes at offset ", offset, " of ", path.string(),
         " (the file was shortened or cannot be read)");
  }
  return bytes;
}

}  // namespace kiln
