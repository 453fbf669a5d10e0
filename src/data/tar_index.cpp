// Tar layout: 512-byte blocks. A header block holds NUL-terminated text fields at fixed offsets
// (name 0..100, size 124..136, checksum 148..156, type flag 156, magic 257..263, prefix 345..500);
// numbers are octal text, or GNU base-256 when the field's first byte has its high bit set. The
// member's data follows, padded to whole blocks. Two zero blocks end the archive.
#include "data/tar_index.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln {

namespace {

constexpr std::uint64_t kBlock = 512;
// 'L' and 'x' payloads are names and short records; a larger one means a corrupt archive.
constexpr std::uint64_t kMaxMetadataSize = 1 << 20;

using Block = std::array<char, kBlock>;

struct Field {
  std::size_t offset;
  std::size_t size;
};
constexpr Field kName{0, 100};
constexpr Field kSize{124, 12};
constexpr Field kChecksum{148, 8};
constexpr std::size_t kTypeFlag = 156;
constexpr Field kMagic{257, 6};
constexpr Field kPrefix{345, 155};

std::string_view field_text(const Block& block, Field field) {
  const std::string_view raw(block.data() + field.offset, field.size);
  return raw.substr(0, raw.find('\0'));
}

// Octal text (leading spaces allowed, ended by a space or NUL) or GNU base-256.
std::optional<std::uint64_t> parse_number(const Block& block, Field field) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(block.data() + field.offset);
  if ((bytes[0] & 0x80) != 0) {
    if ((bytes[0] & 0x40) != 0) return std::nullopt;  // negative
    std::uint64_t value = bytes[0] & 0x3F;
    for (std::size_t i = 1; i < field.size; ++i) {
      if (value > (UINT64_MAX >> 8)) return std::nullopt;
      value = (value << 8) | bytes[i];
    }
    return value;
  }
  std::size_t i = 0;
  while (i < field.size && bytes[i] == ' ') ++i;
  std::uint64_t value = 0;
  for (; i < field.size && bytes[i] >= '0' && bytes[i] <= '7'; ++i) {
    if (value > (UINT64_MAX >> 3)) return std::nullopt;
    value = (value << 3) | static_cast<std::uint64_t>(bytes[i] - '0');
  }
  for (; i < field.size; ++i) {
    if (bytes[i] != ' ' && bytes[i] != '\0') return std::nullopt;
  }
  return value;
}

bool is_zero_block(const Block& block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; });
}

// The checksum sums the header's bytes with the checksum field read as spaces. Some old writers
// summed signed chars, so either sum is accepted.
bool checksum_matches(const Block& block) {
  const auto stored = parse_number(block, kChecksum);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.size;
    const char c = in_field ? ' ' : block[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

// "LENGTH KEY=VALUE\n" records; returns the "path" and "size" values when present.
struct PaxValues {
  std::optional<std::string> path;
  std::optional<std::uint64_t> size;
};

std::optional<PaxValues> parse_pax(std::string_view text) {
  PaxValues values;
  while (!text.empty()) {
    if (text.front() == '\0') break;  // padding some writers leave
    std::size_t length = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      length = length * 10 + static_cast<std::size_t>(text[i] - '0');
      if (length > text.size()) return std::nullopt;
    }
    if (i == 0 || i >= text.size() || text[i] != ' ' || length <= i + 1 || text[length - 1] != '\n') {
      return std::nullopt;
    }
    const std::string_view record = text.substr(i + 1, length - i - 2);
    const std::size_t equals = record.find('=');
    if (equals == std::string_view::npos) return std::nullopt;
    const std::string_view key = record.substr(0, equals);
    const std::string_view value = record.substr(equals + 1);
    if (key == "path") values.path = std::string(value);
    if (key == "size") {
      std::uint64_t size = 0;
      for (const char c : value) {
        if (c < '0' || c > '9' || size > UINT64_MAX / 10) return std::nullopt;
        size = size * 10 + static_cast<std::uint64_t>(c - '0');
      }
      values.size = size;
    }
    text.remove_prefix(length);
  }
  return values;
}

// Reads an archive from its file, or from memory when it was decompressed there.
class TarReader {
 public:
  explicit TarReader(const std::filesystem::path& path) : name_(path.string()) {
    require_regular_file(path);  // before the open, which would wait on a FIFO
    in_.open(path, std::ios::binary);
    if (!in_) fail(name_, ": cannot open for reading");
    std::error_code ec;
    file_size_ = std::filesystem::file_size(path, ec);
    if (ec) fail(name_, ": cannot read the file size (", ec.message(), ")");
  }
  TarReader(const std::vector<std::uint8_t>& archive, std::string name)
      : name_(std::move(name)), file_size_(archive.size()), memory_(&archive) {}

  std::uint64_t file_size() const { return file_size_; }
  const std::string& name() const { return name_; }

  void read(std::uint64_t offset, char* out, std::uint64_t size) {
    if (memory_ != nullptr) {
      // Callers stay within file_size(); the check keeps a slip from reading past the buffer.
      if (offset > memory_->size() || size > memory_->size() - offset) {
        fail(name_, ": read error at offset ", offset, " (", size, " bytes)");
      }
      std::copy_n(memory_->data() + offset, size, out);
      return;
    }
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(out, static_cast<std::streamsize>(size));
    if (static_cast<std::uint64_t>(in_.gcount()) != size) {
      fail(name_, ": read error at offset ", offset, " (", size, " bytes)");
    }
  }

  std::string read_text(std::uint64_t offset, std::uint64_t size) {
    std::string text(size, '\0');
    read(offset, text.data(), size);
    return text;
  }

 private:
  std::string name_;
  std::ifstream in_;
  std::uint64_t file_size_ = 0;
  const std::vector<std::uint8_t>* memory_ = nullptr;
};

// Set by an 'L' or 'x' header for the entry that follows it. (A plain flag rather than an optional
// size: GCC misreads the optional as maybe-uninitialized.)
struct NextEntry {
  std::optional<std::string> path;
  std::uint64_t size = 0;
  bool has_size = false;
};

// Reads the header block at `offset`; false at the zero block that ends the archive.
bool read_header(TarReader& reader, std::uint64_t offset, Block& block) {
  const std::uint64_t file_size = reader.file_size();
  if (file_size - offset < kBlock) {
    fail(reader.name(), ": truncated tar: ", file_size - offset, " bytes at offset ", offset,
         " where a 512-byte header was expected");
  }
  reader.read(offset, block.data(), kBlock);
  if (is_zero_block(block)) return false;
  if (!checksum_matches(block)) {
    fail(reader.name(), ": bad tar header checksum at offset ", offset,
         " (not a tar file, or a corrupt one)");
  }
  return true;
}

// An 'L' (GNU long name) or 'x' (pax extended) header: metadata for the entry that follows it.
void read_metadata(TarReader& reader, char type, std::uint64_t offset, std::uint64_t data_offset,
                   std::uint64_t size, NextEntry& next) {
  const std::string& name = reader.name();
  if (type == 'L') {
    if (size > kMaxMetadataSize) fail(name, ": oversized GNU long name at offset ", offset);
    std::string text = reader.read_text(data_offset, size);
    next.path = text.substr(0, text.find('\0'));
    return;
  }
  if (size > kMaxMetadataSize) fail(name, ": oversized pax header at offset ", offset);
  const auto values = parse_pax(reader.read_text(data_offset, size));
  if (!values) fail(name, ": malformed pax header at offset ", offset);
  if (values->path) next.path = values->path;
  if (values->size) {
    next.size = *values->size;
    next.has_size = true;
  }
}

// The member's path from its own header when no 'L' or 'x' header named it.
std::string header_path(const Block& block) {
  // Only POSIX ustar ("ustar\0") has a name prefix; GNU tar keeps other data there.
  const std::string_view magic(block.data() + kMagic.offset, kMagic.size);
  const std::string_view prefix = field_text(block, kPrefix);
  std::string path(field_text(block, kName));
  if (magic == std::string_view("ustar\0", 6) && !prefix.empty()) path = std::string(prefix) + "/" + path;
  return path;
}

// Where the next header starts: after the member's data, padded to a whole block.
std::uint64_t next_header_offset(const TarReader& reader, std::uint64_t offset, std::uint64_t data_offset,
                                 std::uint64_t size) {
  const std::uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
  if (padded > reader.file_size() - data_offset) {
    fail(reader.name(), ": truncated tar: the member whose header is at offset ", offset,
         " lacks the padding to a whole 512-byte block at the end of the file");
  }
  return data_offset + padded;
}

std::vector<TarMember> index_members(TarReader& reader) {
  const std::string& name = reader.name();
  const std::uint64_t file_size = reader.file_size();
  std::vector<TarMember> members;
  NextEntry next;
  std::uint64_t offset = 0;
  Block block{};
  // A file that stops right after a member (without the two zero blocks) is accepted, as tar does.
  while (offset < file_size) {
    if (!read_header(reader, offset, block)) break;
    const auto header_size = parse_number(block, kSize);
    if (!header_size) fail(name, ": malformed size field in the tar header at offset ", offset);
    const char type = block[kTypeFlag];
    const bool own_size = type == 'x' || type == 'L' || !next.has_size;
    const std::uint64_t size = own_size ? *header_size : next.size;
    const std::uint64_t data_offset = offset + kBlock;
    if (size > file_size - data_offset) {
      fail(name, ": truncated tar: the member whose header is at offset ", offset, " has ", size,
           " bytes, but the file ends ", file_size - data_offset, " bytes after the header");
    }
    if (type == 'L' || type == 'x') {
      read_metadata(reader, type, offset, data_offset, size, next);
    } else if (type != 'K' && type != 'g') {  // 'K': a link's long link name; 'g': pax global header
      if (type == '0' || type == '\0' || type == '7') {
        std::string member_path = next.path ? *next.path : header_path(block);
        // Old (pre-POSIX) archives mark folders only by a trailing slash.
        if (member_path.empty() || member_path.back() != '/') {
          members.push_back({std::move(member_path), offset, data_offset, size});
        }
      }
      next.path.reset();
      next.has_size = false;
    }
    offset = next_header_offset(reader, offset, data_offset, size);
  }
  return members;
}

}  // namespace

std::vector<TarMember> index_tar(const std::filesystem::path& path) {
  TarReader reader(path);
  return index_members(reader);
}

std::vector<TarMember> index_tar(const std::vector<std::uint8_t>& archive, const std::string& name) {
  TarReader reader(archive, name);
  return index_members(reader);
}

}  // namespace kiln
