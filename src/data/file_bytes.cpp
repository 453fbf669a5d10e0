#include "data/file_bytes.h"

#include <fstream>
#include <sstream>

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

std::string read_small_text_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                 const std::string& kind) {
  std::error_code error;
  require(std::filesystem::is_regular_file(path, error), path.string(), ": not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  require(!error, path.string(), ": cannot read its size (", error.message(), ")");
  require(size <= max_bytes, path.string(), ": ", size, " bytes, more than ", kind, " holds (", max_bytes,
          " at most)");
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), path.string(), ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kiln
