#include "data/idx_file.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/error.h"
#include "data/gzip_reader.h"
#include "io/file_kind.h"

namespace kiln {

namespace {

constexpr std::uint8_t kUint8Type = 0x08;
constexpr std::size_t kChunk = 1 << 20;

// What one kind of IDX file holds, for the reader and its messages.
struct IdxLayout {
  std::uint8_t dimensions;
  const char* what;   // "uint8 images [N, rows, cols]"
  const char* magic;  // "00 00 08 03"
};

constexpr IdxLayout kImages = {3, "uint8 images [N, rows, cols]", "00 00 08 03"};
constexpr IdxLayout kLabels = {1, "uint8 labels [N]", "00 00 08 01"};

std::string hex_bytes(const std::uint8_t* bytes, std::size_t count) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) text.push_back(' ');
    text.push_back(kDigits[bytes[i] >> 4]);
    text.push_back(kDigits[bytes[i] & 0xF]);
  }
  return text;
}

std::string type_name(std::uint8_t type) {
  switch (type) {
    case 0x08:
      return "uint8";
    case 0x09:
      return "int8";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown type 0x" + hex_bytes(&type, 1);
  }
}

// A file that is not IDX at all: named by its kind when its first bytes tell it, else by its magic.
[[noreturn]] void fail_not_idx(MaybeGzipReader& reader, const std::string& name, const IdxLayout& layout,
                               std::vector<std::uint8_t> head) {
  const std::size_t got = head.size();
  head.resize(kFileKindHeadSize);
  head.resize(got + reader.read(head.data() + got, kFileKindHeadSize - got));
  const std::string expected = std::string("an IDX file of ") + layout.what;
  reject_other_file_kind(head, FileKind::kUnknown, name, expected);
  if (got < 4) {
    fail(name, ": ", head.empty() ? "empty" : "truncated", " (", reader.position(),
         " bytes): expected an IDX header, magic ", layout.magic, " (", layout.what, ")");
  }
  fail(name, ": not an IDX file: expected magic ", layout.magic, " (", layout.what, "), got ",
       hex_bytes(head.data(), 4));
}

// The header's sizes, after checking its magic against `layout`.
std::vector<std::uint64_t> read_header(MaybeGzipReader& reader, const std::string& name,
                                       const IdxLayout& layout) {
  std::vector<std::uint8_t> magic(4);
  magic.resize(reader.read(magic.data(), magic.size()));
  if (magic.size() < 4 || magic[0] != 0 || magic[1] != 0) fail_not_idx(reader, name, layout, magic);
  if (magic[2] != kUint8Type) {
    fail(name, ": holds ", type_name(magic[2]), " IDX data; kiln reads ", layout.what, " (magic ",
         layout.magic, ")");
  }
  if (magic[3] != layout.dimensions) {
    const char* hint = magic[3] == kLabels.dimensions   ? " (a labels file?)"
                       : magic[3] == kImages.dimensions ? " (an images file?)"
                                                        : "";
    fail(name, ": an IDX file of ", int{magic[3]}, " dimension(s)", hint, ", expected ", layout.what,
         " (magic ", layout.magic, ")");
  }
  std::vector<std::uint8_t> sizes(4 * std::size_t{layout.dimensions});
  const std::size_t got = reader.read(sizes.data(), sizes.size());
  require(got == sizes.size(), name, ": truncated IDX header: ", 4 + got, " of ", 4 + sizes.size(), " bytes");
  std::vector<std::uint64_t> dims;
  for (std::size_t d = 0; d < layout.dimensions; ++d) {
    const std::uint8_t* b = sizes.data() + 4 * d;
    dims.push_back((std::uint64_t{b[0]} << 24) | (std::uint64_t{b[1]} << 16) | (std::uint64_t{b[2]} << 8) |
                   b[3]);
  }
  return dims;
}

// `count` items of `item_bytes` each, of which the first `keep` are kept. Every claim is checked
// against what the file can hold before memory is asked for, and the data is read as it arrives.
std::vector<std::uint8_t> read_items(MaybeGzipReader& reader, const std::string& name, std::uint64_t count,
                                     std::uint64_t item_bytes, std::size_t keep, const std::string& claim) {
  require(item_bytes <= kMaxIdxBytes / count, name, ": its header claims ", claim,
          ", more than kiln reads from an IDX file (", kMaxIdxBytes >> 30, " GiB)");
  const std::uint64_t total = count * item_bytes;
  const std::uint64_t room = reader.max_data_bytes() - std::min(reader.max_data_bytes(), reader.position());
  if (total > room) {
    fail(name, ": truncated: its header claims ", claim, " (", total, " bytes), but the file ",
         reader.compressed() ? "(gzip, " + std::to_string(reader.file_size()) + " bytes) can hold at most "
                             : std::string("holds "),
         room, " bytes of data");
  }
  const std::uint64_t kept_bytes = std::min<std::uint64_t>(keep, count) * item_bytes;
  std::vector<std::uint8_t> data;
  if (!reader.compressed()) data.reserve(static_cast<std::size_t>(kept_bytes));  // the file holds them
  std::uint64_t read = 0;
  while (read < total) {
    std::uint64_t want = std::min<std::uint64_t>(total - read, kChunk);
    std::uint64_t got = 0;
    if (read < kept_bytes) {
      want = std::min(want, kept_bytes - read);
      const std::size_t old = data.size();
      data.resize(old + static_cast<std::size_t>(want));
      got = reader.read(data.data() + old, static_cast<std::size_t>(want));
      data.resize(old + static_cast<std::size_t>(got));
    } else {
      got = reader.skip(want);
    }
    read += got;
    if (got < want) break;
  }
  require(read == total, name, ": truncated: its data ends after ", read, " of the ", total,
          " bytes its header claims (", claim, ")");
  std::uint8_t extra = 0;
  require(reader.read(&extra, 1) == 0, name, ": holds more data than its header claims (", claim, ", ", total,
          " bytes)");
  return data;
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path, std::size_t keep) {
  const std::string name = path.string();
  MaybeGzipReader reader(path);
  const std::vector<std::uint64_t> dims = read_header(reader, name, kImages);
  require(dims[0] > 0, name, ": holds no images (its header says 0)");
  require(dims[1] > 0 && dims[2] > 0, name, ": holds images of ", dims[1], "x", dims[2],
          " pixels: expected at least 1x1");
  const std::string claim = std::to_string(dims[0]) + " images of " + std::to_string(dims[1]) + "x" +
                            std::to_string(dims[2]) + " pixels";
  IdxImages images;
  images.count = static_cast<std::size_t>(dims[0]);
  images.rows = static_cast<std::size_t>(dims[1]);
  images.cols = static_cast<std::size_t>(dims[2]);
  images.pixels = read_items(reader, name, dims[0], dims[1] * dims[2], keep, claim);
  return images;
}

IdxLabels read_idx_labels(const std::filesystem::path& path, std::size_t keep) {
  const std::string name = path.string();
  MaybeGzipReader reader(path);
  const std::vector<std::uint64_t> dims = read_header(reader, name, kLabels);
  require(dims[0] > 0, name, ": holds no labels (its header says 0)");
  IdxLabels labels;
  labels.count = static_cast<std::size_t>(dims[0]);
  labels.labels = read_items(reader, name, dims[0], 1, keep, std::to_string(dims[0]) + " labels");
  return labels;
}

void check_idx_pair(const IdxImages& images, const std::filesystem::path& images_path,
                    const IdxLabels& labels, const std::filesystem::path& labels_path) {
  require(images.count == labels.count, labels_path.string(), ": holds ", labels.count, " labels but ",
          images_path.string(), " holds ", images.count,
          " images: expected one label per image (the same set?)");
}

}  // namespace kiln
