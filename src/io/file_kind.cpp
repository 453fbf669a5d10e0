#include "io/file_kind.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace kiln {

namespace {

bool has_at(std::span<const std::uint8_t> head, std::size_t offset, std::string_view magic) {
  return head.size() >= offset + magic.size() &&
         std::equal(
             magic.begin(), magic.end(), head.begin() + static_cast<std::ptrdiff_t>(offset),
             [](char expected, std::uint8_t byte) { return static_cast<std::uint8_t>(expected) == byte; });
}

// safetensors: a little-endian u64 header length, then the header, a JSON object. Lengths under 4 GiB
// (the upper four bytes zero) tell it from JSON text, which never holds a zero byte.
bool looks_like_safetensors(std::span<const std::uint8_t> head) {
  if (head.size() < 9 || head[8] != '{') return false;
  std::uint64_t length = 0;
  for (std::size_t i = 0; i < 8; ++i) length |= std::uint64_t{head[i]} << (8 * i);
  return length >= 2 && length >> 32 == 0;
}

bool looks_like_json(std::span<const std::uint8_t> head) {
  const auto first = std::find_if(head.begin(), head.end(), [](std::uint8_t byte) {
    return byte != ' ' && byte != '\t' && byte != '\r' && byte != '\n';
  });
  return first != head.end() && (*first == '{' || *first == '[');
}

}  // namespace

FileKind sniff_file_kind(std::span<const std::uint8_t> head) {
  // First: a header length may begin with any bytes, even another format's magic.
  if (looks_like_safetensors(head)) return FileKind::kSafetensors;
  if (has_at(head, 0, "\xFF\xD8\xFF")) return FileKind::kJpeg;
  if (has_at(head, 0, "\x89PNG\r\n\x1A\n")) return FileKind::kPng;
  if (has_at(head, 0, "RIFF") && has_at(head, 8, "WEBP")) return FileKind::kWebp;
  if (has_at(head, 0, std::string_view(kPlanMagic.data(), kPlanMagic.size()))) return FileKind::kPlan;
  if (has_at(head, 0, "\x93NUMPY")) return FileKind::kNpy;
  if (has_at(head, 0, "\x1F\x8B")) return FileKind::kGzip;
  if (has_at(head, 0, "PK\x03\x04") || has_at(head, 0, "PK\x05\x06")) return FileKind::kZip;
  if (has_at(head, 257, "ustar")) return FileKind::kTar;
  if (looks_like_json(head)) return FileKind::kJson;
  return FileKind::kUnknown;
}

FileKind sniff_file_kind(const std::filesystem::path& path) {
  std::error_code error;
  // Opening a FIFO would wait for a writer, and a device is no file of any kind.
  if (!std::filesystem::is_regular_file(path, error)) return FileKind::kUnknown;
  std::vector<std::uint8_t> head(kFileKindHeadSize);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return sniff_file_kind(head);
}

std::string_view file_kind_description(FileKind kind) {
  switch (kind) {
    case FileKind::kUnknown:
      return "a file of unknown kind";
    case FileKind::kJpeg:
      return "a JPEG image";
    case FileKind::kPng:
      return "a PNG image";
    case FileKind::kWebp:
      return "a WebP image";
    case FileKind::kPlan:
      return "a kiln plan";
    case FileKind::kTar:
      return "a tar archive";
    case FileKind::kNpy:
      return "a .npy array";
    case FileKind::kSafetensors:
      return "a safetensors checkpoint";
    case FileKind::kJson:
      return "a JSON file";
    case FileKind::kGzip:
      return "a gzip-compressed file";
    case FileKind::kZip:
      return "a zip archive";
  }
  return "a file of unknown kind";
}

void reject_other_file_kind(std::span<const std::uint8_t> head, FileKind wanted, const std::string& name,
                            std::string_view expected) {
  const FileKind kind = sniff_file_kind(head);
  if (kind == wanted || kind == FileKind::kUnknown) return;
  fail(name, ": this is ", file_kind_description(kind), ", not ", expected);
}

}  // namespace kiln
