// Reading a file's bytes front to back, gzip-compressed or not (told from its first bytes, never from
// its name). For a gzip file the bytes are the decompressed data, inflated a block at a time, so that
// nothing is allocated for data the file does not hold; its checksum and length are checked at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

// Deflate's best ratio is about 1032 to 1: a gzip file of B bytes holds at most this many times B.
inline constexpr std::uint64_t kMaxInflateRatio = 1032;

class MaybeGzipReader {
 public:
  // Fails naming `path` when it cannot be opened.
  explicit MaybeGzipReader(const std::filesystem::path& path);
  ~MaybeGzipReader();
  MaybeGzipReader(const MaybeGzipReader&) = delete;
  MaybeGzipReader& operator=(const MaybeGzipReader&) = delete;

  bool compressed() const { return inflater_ != nullptr; }
  // The size of the file on disk.
  std::uint64_t file_size() const { return file_size_; }
  // The most data bytes the file can hold: its size, or for gzip its size times kMaxInflateRatio.
  std::uint64_t max_data_bytes() const;
  // The data bytes handed out so far.
  std::uint64_t position() const { return position_; }

  // Reads up to `count` bytes into `out`; fewer only at the end of the data. Fails naming the file on
  // a read error or corrupt gzip data (a bad header, checksum or length, or a stream cut short).
  std::size_t read(std::uint8_t* out, std::size_t count);
  // Reads and drops up to `count` bytes; returns how many there were.
  std::uint64_t skip(std::uint64_t count);

 private:
  struct Inflater;

  std::size_t read_raw(std::uint8_t* out, std::size_t count);
  std::size_t inflate_into(std::uint8_t* out, std::size_t count);
  void inflate_step(Inflater& state);
  bool refill();

  std::string name_;
  std::ifstream in_;
  std::uint64_t file_size_ = 0;
  std::uint64_t position_ = 0;
  std::unique_ptr<Inflater> inflater_;
  std::vector<std::uint8_t> input_;  // compressed bytes read ahead
};

}  // namespace kiln
