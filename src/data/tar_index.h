// An index of an uncompressed tar archive's regular files, read once so that any member can later be
// loaded with one seek and read (or, for an archive held in memory, sliced out of it). Reads POSIX ustar
// (with its name prefix), GNU tar (long names 'L', base-256 sizes) and pax ('x' headers: path and size);
// other entry types (folders, links, global pax headers) are passed over.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {

struct TarMember {
  std::string path;                 // as stored, e.g. "val/n01440764_0001.jpg"
  std::uint64_t header_offset = 0;  // of the member's own header block
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;
};

// The regular-file members in archive order. A broken archive (a header checksum that does not
// match, a member or header running past the end of the file, a malformed field) fails naming the
// file and the offset.
std::vector<TarMember> index_tar(const std::filesystem::path& path);
// The same for an archive already in memory (a decompressed .tar.gz); `name` stands for it in errors.
std::vector<TarMember> index_tar(const std::vector<std::uint8_t>& archive, const std::string& name);

}  // namespace kiln
