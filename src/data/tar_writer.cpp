#include "data/tar_writer.h"

#include <array>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace kiln {

namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kNameField = 100;
// ustar's size field holds 11 octal digits.
constexpr std::uint64_t kMaxMemberBytes = (std::uint64_t{1} << 33) - 1;

// An octal field of `width` bytes: width - 1 digits and a NUL.
void put_octal(char* field, std::size_t width, std::uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

bool plain_name(const std::string& member) {
  for (const char c : member) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  }
  return true;
}

}  // namespace

TarWriter::TarWriter(std::ostream& out, std::string name) : out_(out), name_(std::move(name)) {}

void TarWriter::add(const std::string& member, std::span<const std::uint8_t> data) {
  require(!member.empty() && member.size() <= kNameField && plain_name(member), name_, ": tar member name \"",
          member, "\": expected 1 to 100 printable ASCII characters");
  require(data.size() <= kMaxMemberBytes, name_, ": member ", member, " is over 8 GiB");
  std::array<char, kBlock> header{};
  std::memcpy(header.data(), member.data(), member.size());
  put_octal(header.data() + 100, 8, 0644);  // mode
  put_octal(header.data() + 108, 8, 0);     // uid
  put_octal(header.data() + 116, 8, 0);     // gid
  put_octal(header.data() + 124, 12, data.size());
  put_octal(header.data() + 136, 12, 0);  // mtime
  header[156] = '0';                      // a regular file
  std::memcpy(header.data() + 257, "ustar", 6);
  std::memcpy(header.data() + 263, "00", 2);
  // The checksum is the byte sum with its own field read as eight spaces.
  std::memset(header.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (const char c : header) sum += static_cast<unsigned char>(c);
  std::snprintf(header.data() + 148, 8, "%06o", sum);
  header[155] = ' ';
  out_.write(header.data(), header.size());
  out_.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  const std::array<char, kBlock> zeros{};
  const std::size_t padding = (kBlock - data.size() % kBlock) % kBlock;
  out_.write(zeros.data(), static_cast<std::streamsize>(padding));
}

void TarWriter::finish() {
  const std::array<char, kBlock> zeros{};
  out_.write(zeros.data(), zeros.size());
  out_.write(zeros.data(), zeros.size());
}

}  // namespace kiln
