#include "data/gzip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>

#include "core/error.h"

namespace kiln {

namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::array<std::uint8_t, 2> kGzipMagic = {0x1f, 0x8b};
// zlib's window bits for the gzip wrapper only (15 + 16), so zlib checks the header, CRC-32 and length.
constexpr int kGzipWindowBits = 15 + 16;

}  // namespace

struct MaybeGzipReader::Inflater {
  z_stream stream{};
  bool in_member = true;  // inside a gzip member: the input must not end here
  bool finished = false;  // the last member ended with the file
};

MaybeGzipReader::MaybeGzipReader(const std::filesystem::path& path) : name_(path.string()) {
  std::error_code ec;
  require(std::filesystem::is_regular_file(path, ec), name_, ": does not exist or is not a file");
  file_size_ = std::filesystem::file_size(path, ec);
  require(!ec, name_, ": cannot read its size (", ec.message(), ")");
  in_.open(path, std::ios::binary);
  require(in_.is_open(), name_, ": cannot open for reading");
  std::array<char, 2> head{};
  in_.read(head.data(), head.size());
  const bool gzip = in_.gcount() == 2 && static_cast<std::uint8_t>(head[0]) == kGzipMagic[0] &&
                    static_cast<std::uint8_t>(head[1]) == kGzipMagic[1];
  in_.clear();
  in_.seekg(0);
  if (!gzip) return;
  inflater_ = std::make_unique<Inflater>();
  require(inflateInit2(&inflater_->stream, kGzipWindowBits) == Z_OK, name_,
          ": cannot start gzip decompression");
  input_.resize(kChunk);
}

MaybeGzipReader::~MaybeGzipReader() {
  if (inflater_) inflateEnd(&inflater_->stream);
}

std::uint64_t MaybeGzipReader::max_data_bytes() const {
  return compressed() ? file_size_ * kMaxInflateRatio : file_size_;
}

std::size_t MaybeGzipReader::read(std::uint8_t* out, std::size_t count) {
  const std::size_t got = compressed() ? inflate_into(out, count) : read_raw(out, count);
  position_ += got;
  return got;
}

std::uint64_t MaybeGzipReader::skip(std::uint64_t count) {
  std::vector<std::uint8_t> scratch(static_cast<std::size_t>(std::min<std::uint64_t>(count, kChunk)));
  std::uint64_t skipped = 0;
  while (skipped < count) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(count - skipped, scratch.size()));
    const std::size_t got = read(scratch.data(), want);
    skipped += got;
    if (got < want) break;
  }
  return skipped;
}

std::size_t MaybeGzipReader::read_raw(std::uint8_t* out, std::size_t count) {
  in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count));
  require(!in_.bad(), name_, ": read error");
  return static_cast<std::size_t>(in_.gcount());
}

bool MaybeGzipReader::refill() {
  in_.read(reinterpret_cast<char*>(input_.data()), static_cast<std::streamsize>(input_.size()));
  require(!in_.bad(), name_, ": read error");
  const auto got = static_cast<uInt>(in_.gcount());
  inflater_->stream.next_in = input_.data();
  inflater_->stream.avail_in = got;
  return got > 0;
}

std::size_t MaybeGzipReader::inflate_into(std::uint8_t* out, std::size_t count) {
  Inflater& state = *inflater_;
  z_stream& z = state.stream;
  std::size_t got = 0;
  while (got < count && !state.finished) {
    // zlib counts in uInt: hand it at most a chunk's worth of room at a time.
    const auto room = static_cast<uInt>(std::min<std::size_t>(count - got, kChunk));
    z.next_out = out + got;
    z.avail_out = room;
    while (z.avail_out > 0 && !state.finished) inflate_step(state);
    got += room - z.avail_out;
  }
  return got;
}

void MaybeGzipReader::inflate_step(Inflater& state) {
  z_stream& z = state.stream;
  if (z.avail_in == 0 && !refill()) {
    require(!state.in_member, name_, ": truncated gzip data (the compressed stream ends early)");
    state.finished = true;
    return;
  }
  const int status = inflate(&z, Z_NO_FLUSH);
  if (status == Z_STREAM_END) {
    // Another gzip member may follow (gzip allows concatenated members), as gunzip reads them.
    state.in_member = false;
    if (z.avail_in == 0 && !refill()) {
      state.finished = true;
      return;
    }
    inflateReset(&z);
    state.in_member = true;
    return;
  }
  if (status == Z_BUF_ERROR && z.avail_in == 0) return;  // needs more input
  require(status == Z_OK, name_, ": corrupt gzip data (", z.msg != nullptr ? z.msg : "inflate failed", ")");
}

}  // namespace kiln
