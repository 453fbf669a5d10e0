#include "data/file_bytes.h"

#include <fstream>

#include "core/error.h"

namespace kiln {

std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path, std::uint64_t offset,
                                          std::optional<std::uint64_t> size, const std::string& name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(name, ": is a directory, expected an image file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(name, ": cannot open ", path.string(), " for reading");
  if (!size) {
    const std::uintmax_t file_size = std::filesystem::file_size(path, ec);
    if (ec) fail(name, ": cannot read the file size (", ec.message(), ")");
    size = file_size;
  }
  std::vector<std::uint8_t> bytes(*size);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const auto got = static_cast<std::uint64_t>(in.gcount());
  if (got != *size) {
    fail(name, ": read ", got, " of ", *size, " bytes at offset ", offset, " of ", path.string(),
         " (the file was shortened or cannot be read)");
  }
  return bytes;
}

}  // namespace kiln
