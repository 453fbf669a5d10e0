// Opening the files users name. A path may name a folder, a FIFO (opening it waits for a writer), a
// character device (/dev/zero never ends, /dev/stdin waits for a terminal) or a socket; a reader that
// trusted it blocked, hashed forever or read until memory ran out. Every reader of a user's file goes
// through here: the file is opened without waiting, checked to be a regular file before a byte is read,
// and a whole-file read is bounded by what its format can need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace kiln {

// An open regular file, read by offset; closed when it goes.
class RegularFile {
 public:
  // Fails "<path>: cannot open: No such file or directory", "<path>: is a folder, not a regular file",
  // "<path>: is a FIFO (named pipe), not a regular file", ... (`name` replaces the path in messages).
  static RegularFile open(const std::filesystem::path& path, const std::string& name = {});

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  std::uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }  // for mmap
  // Reads up to `count` bytes at `offset` into `out`; returns how many it read (fewer only at the end
  // of the file). Fails naming the file on a read error.
  std::size_t read_at(std::uint64_t offset, void* out, std::size_t count) const;
  // Fails "<name>: N bytes, more than WHAT can need (at most MAX)" when the file is larger than max_bytes.
  void require_at_most(std::uint64_t max_bytes, std::string_view what) const;

 private:
  RegularFile(int fd, std::uint64_t size, std::string name) : fd_(fd), size_(size), name_(std::move(name)) {}
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string name_;
};

// Fails as RegularFile::open does unless `path` is a regular file; for readers that hand the path to a
// library (a stream, a decoder) which would wait on a FIFO or read a device forever.
void require_regular_file(const std::filesystem::path& path, const std::string& name = {});

// The whole of a regular file of at most `max_bytes` bytes ("more than WHAT can need" otherwise).
std::string read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                              std::string_view what, const std::string& name = {});

// Bounds for whole-file reads of the text formats kiln reads: far above any real file of the kind, far
// below what would exhaust a machine's memory.
inline constexpr std::uint64_t kMaxConfigBytes = 64ull << 20;       // config.json (21k class names: ~1 MB)
inline constexpr std::uint64_t kMaxCacheBytes = 256ull << 20;       // calibration and tactic caches
inline constexpr std::uint64_t kMaxManifestBytes = 16ull << 20;     // manifest.toml (a few KB)
inline constexpr std::uint64_t kMaxReportJsonBytes = 256ull << 20;  // study.json, bench JSON

}  // namespace kiln
