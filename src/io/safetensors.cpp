#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"
#include "io/file_kind.h"
#include "io/user_json.h"
#include "io/utf8_text.h"

namespace kiln {

// Checks whose messages format JSON values, names or shapes use if/fail rather than require:
// require builds its message arguments even when the check passes, which costs time on big headers.

namespace {

using Json = nlohmann::json;

constexpr std::size_t kPrefixSize = 8;       // the u64 header length
constexpr std::size_t kHeaderAlignment = 8;  // the reference writer pads the header to this
constexpr std::size_t kMaxQuotedLength = 200;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kSupportedDTypes = "F64, F32, F16, BF16, F8_E4M3, I64, I32, I16, I8, U8, BOOL";

// Names come from the file and may hold control characters (JSON allows "\n"); error messages
// stay on one line and short.
std::string printable(std::string_view text) {
  std::string out;
  for (const char ch : text.substr(0, kMaxQuotedLength)) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7F) {
      constexpr std::string_view kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += ch;
    }
  }
  if (text.size() > kMaxQuotedLength) out += "...";
  return out;
}

std::string describe(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return cat(value.type_name(), " ", text);
}

// A JSON integer >= 0 (nlohmann stores non-negative literals as unsigned, "-0" as signed).
std::optional<std::uint64_t> as_count(const Json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return std::nullopt;
}

// The whole file, mapped read-only; the shared pointer unmaps it when the last view goes.
struct Mapping {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const void> keep_alive;
};

Mapping map_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  const RegularFile opened = RegularFile::open(path);
  Mapping mapping;
  mapping.size = static_cast<std::size_t>(opened.size());
  if (mapping.size < kPrefixSize) {
    fail(file, ": file has ", mapping.size, " bytes; a safetensors file starts with an 8-byte header length");
  }
  // The mapping stays valid after `opened` closes the descriptor.
  void* address = ::mmap(nullptr, mapping.size, PROT_READ, MAP_PRIVATE, opened.fd(), 0);
  const int code = errno;
  if (address == MAP_FAILED) fail(file, ": cannot map ", mapping.size, " bytes: ", std::strerror(code));
  const std::size_t size = mapping.size;
  mapping.data = static_cast<const std::byte*>(address);
  mapping.keep_alive = std::shared_ptr<const void>(
      address, [size](const void* start) { ::munmap(const_cast<void*>(start), size); });
  return mapping;
}

// Parses the header, rejecting duplicate keys at any level (json::parse alone keeps the last one).
Json parse_header(const std::string& file, std::string_view header) {
  const std::size_t bad = find_invalid_utf8(header);
  if (bad != std::string_view::npos) fail(file, ": header is not valid UTF-8 (byte ", bad, " of the header)");
  require(!header.empty() && header.front() == '{', file,
          ": header must be a JSON object beginning with '{'");
  // nlohmann's lexer takes a NUL byte for the end of input, which would hide anything after it;
  // valid JSON never holds a raw NUL.
  if (const auto nul = header.find('\0'); nul != std::string_view::npos) {
    fail(file, ": header is not valid JSON: NUL byte at byte ", nul, " of the header");
  }

  std::vector<std::set<std::string>> open_objects;
  std::string tensor;  // the top-level key being parsed, for messages
  const auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    require_json_depth(depth, event, file);
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == Json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (depth == 1) tensor = key;
      if (!open_objects.back().insert(key).second) {
        if (depth == 1) fail(file, ": duplicate tensor name '", printable(key), "' in the header");
        fail(file, ": '", printable(tensor), "': duplicate key '", printable(key), "'");
      }
    }
    return true;
  };
  try {
    Json parsed = Json::parse(header.begin(), header.end(), check);
    require(parsed.is_object(), file, ": header must be a JSON object");
    return parsed;
  } catch (const Json::exception& error) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep the position and reason.
    std::string_view reason = error.what();
    if (const auto end = reason.find("] "); end != std::string_view::npos) reason.remove_prefix(end + 2);
    fail(file, ": header is not valid JSON: ", printable(reason));
  }
}

std::map<std::string, std::string> parse_metadata(const std::string& file, const Json& value) {
  if (!value.is_object()) fail(file, ": __metadata__ must be an object of strings, got ", describe(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, entry] : value.items()) {
    if (!entry.is_string()) {
      fail(file, ": __metadata__ key '", printable(key), "': expected a string, got ", describe(entry));
    }
    metadata.emplace(key, entry.get<std::string>());
  }
  return metadata;
}

struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

DType parse_dtype(const std::string& where, const Json& value) {
  if (!value.is_string()) fail(where, ": 'dtype' must be a string, got ", describe(value));
  const auto& name = value.get_ref<const std::string&>();
  const auto dtype = dtype_from_safetensors_name(name);
  if (!dtype.has_value()) {
    fail(where, ": dtype '", printable(name), "' is unsupported (supported: ", kSupportedDTypes, ")");
  }
  return *dtype;
}

Shape parse_shape(const std::string& where, const Json& value) {
  if (!value.is_array()) {
    fail(where, ": 'shape' must be an array of non-negative integers, got ", describe(value));
  }
  Shape shape;
  shape.reserve(value.size());
  for (const auto& extent : value) {
    const auto count = as_count(extent);
    if (!count) fail(where, ": 'shape' must hold non-negative integers, got ", describe(extent));
    if (*count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(where, ": 'shape' extent ", *count, " is too large");
    }
    shape.push_back(static_cast<std::int64_t>(*count));
  }
  return shape;
}

// Bytes the tensor needs. Every partial product is checked, in the order shape_numel multiplies,
// so that later numel() calls cannot overflow either.
std::uint64_t byte_count(const std::string& where, DType dtype, const Shape& shape) {
  std::int64_t numel = 1;
  for (const auto extent : shape) {
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      fail(where, ": shape ", shape_str(shape), " has more elements than fit in 64 bits");
    }
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(numel), dtype_size(dtype), &bytes)) {
    fail(where, ": shape ", shape_str(shape), " needs more bytes than fit in 64 bits");
  }
  return bytes;
}

Entry parse_entry(const std::string& file, const std::string& name, const Json& value,
                  std::uint64_t data_size) {
  const std::string where = cat(file, ": tensor '", printable(name), "'");
  if (!value.is_object()) {
    fail(where, ": expected an object with dtype, shape and data_offsets, got ", describe(value));
  }
  for (const auto& [key, field] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(where, ": unexpected key '", printable(key), "' (expected only dtype, shape and data_offsets)");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    require(value.contains(key), where, ": missing '", key, "'");
  }
  Entry entry;
  entry.name = name;
  entry.dtype = parse_dtype(where, value["dtype"]);
  entry.shape = parse_shape(where, value["shape"]);

  const Json& offsets = value["data_offsets"];
  if (!(offsets.is_array() && offsets.size() == 2)) {
    fail(where, ": 'data_offsets' must be an array of two non-negative integers [begin, end], got ",
         describe(offsets));
  }
  const auto begin = as_count(offsets[0]);
  const auto end = as_count(offsets[1]);
  if (!(begin.has_value() && end.has_value())) {
    fail(where, ": 'data_offsets' must hold two non-negative integers, got ", describe(offsets));
  }
  require(*begin <= *end, where, ": data_offsets [", *begin, ", ", *end, "] begin after they end");
  entry.begin = *begin;
  entry.end = *end;

  const std::uint64_t needed = byte_count(where, entry.dtype, entry.shape);
  require(entry.end - entry.begin == needed, where, ": data_offsets [", entry.begin, ", ", entry.end,
          "] hold ", entry.end - entry.begin, " bytes, but ", safetensors_name(entry.dtype), " ",
          shape_str(entry.shape), " needs ", needed);
  require(entry.end <= data_size, where, ": data_offsets [", entry.begin, ", ", entry.end,
          "] end beyond the data section, which holds ", data_size, " bytes");
  return entry;
}

// Sorts by offset and checks that the ranges tile the data section: no overlap, no gap, nothing after.
void check_coverage(const std::string& file, std::vector<Entry>& entries, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const auto& entry : entries) {
    const std::string where = cat(file, ": tensor '", printable(entry.name), "': data_offsets [", entry.begin,
                                  ", ", entry.end, "]");
    if (entry.begin < covered) {
      fail(where, " overlap tensor '", printable(previous->name), "' [", previous->begin, ", ", previous->end,
           "]");
    }
    if (entry.begin > covered) {
      if (previous == nullptr) {
        fail(where, " leave a gap: the first ", entry.begin, " bytes of data belong to no tensor");
      }
      fail(where, " leave a gap of ", entry.begin - covered, " bytes after tensor '",
           printable(previous->name), "', which ends at ", covered);
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_size) {
    if (previous == nullptr) {
      fail(file, ": data section holds ", data_size, " bytes but the header lists no tensors");
    }
    fail(file, ": data section holds ", data_size, " bytes but the last tensor '", printable(previous->name),
         "' ends at ", covered, " (", data_size - covered,
         " bytes after the last tensor belong to no tensor)");
  }
}

std::uint64_t load_u64_le(const std::byte* bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) value |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  return value;
}

void check_writable_text(std::string_view text, std::string_view what) {
  if (find_invalid_utf8(text) != std::string_view::npos) {
    fail("write_safetensors: ", what, " '", printable(text), "' is not valid UTF-8");
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  const Mapping mapping = map_file(path);
  reject_other_file_kind(
      {reinterpret_cast<const std::uint8_t*>(mapping.data), std::min(mapping.size, kFileKindHeadSize)},
      FileKind::kSafetensors, file, "a safetensors checkpoint");

  const std::uint64_t header_size = load_u64_le(mapping.data);
  require(header_size <= kSafetensorsMaxHeader, file, ": header length ", header_size,
          " exceeds the limit of ", kSafetensorsMaxHeader, " bytes");
  const std::uint64_t available = mapping.size - kPrefixSize;
  require(header_size <= available, file, ": header length ", header_size, " exceeds the ", available,
          " bytes that follow the 8-byte length (file truncated?)");
  const std::string_view header(reinterpret_cast<const char*>(mapping.data + kPrefixSize), header_size);
  const Json json = parse_header(file, header);

  const std::byte* data = mapping.data + kPrefixSize + header_size;
  const std::uint64_t data_size = available - header_size;

  SafetensorsFile result;
  result.path_ = path;
  result.file_size_ = mapping.size;
  std::vector<Entry> entries;
  for (const auto& [key, value] : json.items()) {
    if (key == kMetadataKey) {
      result.metadata_ = parse_metadata(file, value);
    } else {
      entries.push_back(parse_entry(file, key, value, data_size));
    }
  }
  check_coverage(file, entries, data_size);

  for (auto& entry : entries) {
    const std::byte* start = data + entry.begin;
    const auto size = static_cast<std::size_t>(entry.end - entry.begin);
    // The format does not align tensors within the data section, and the header length is arbitrary,
    // so a tensor may start at any address. Tensor::data<T>() hands out typed pointers, so a
    // misaligned tensor is copied into its own buffer (operator new aligns it for every dtype); the
    // rest stay zero-copy views of the mapping. Either way the tensor is read-only.
    Tensor tensor;
    if (size == 0 || reinterpret_cast<std::uintptr_t>(start) % dtype_size(entry.dtype) == 0) {
      tensor = Tensor::view(entry.dtype, entry.shape, start, mapping.keep_alive);
    } else {
      std::shared_ptr<std::byte[]> copy(new std::byte[size]);
      std::memcpy(copy.get(), start, size);
      tensor =
          Tensor::view(entry.dtype, entry.shape, copy.get(), std::shared_ptr<const void>(copy, copy.get()));
    }
    result.names_.push_back(entry.name);
    result.tensors_.emplace(std::move(entry.name), std::move(tensor));
  }
  // Note: the mapping reads the file lazily; if another process truncates it while mapped, reading a
  // vanished page raises SIGBUS. Checkpoints are not expected to change under a running engine.
  return result;
}

const Tensor& SafetensorsFile::tensor(const std::string& name) const {
  const auto found = tensors_.find(name);
  if (found == tensors_.end()) {
    fail(path_.string(), ": no tensor named '", printable(name), "' (the file holds ", tensors_.size(),
         " tensors)");
  }
  return found->second;
}

void write_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string file = path.string();
  // ordered_json keeps insertion order: __metadata__ first, then tensors by name (std::map order).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& entries = header[std::string(kMetadataKey)] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) {
      check_writable_text(key, "metadata key");
      check_writable_text(value, "metadata value");
      entries[key] = value;
    }
  }
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    require(name != kMetadataKey, file, ": a tensor cannot be named '", kMetadataKey, "'");
    check_writable_text(name, "tensor name");
    if (tensor.empty()) fail(file, ": tensor '", printable(name), "' has no storage");
    const std::uint64_t size = tensor.nbytes();
    header[name] = {{"dtype", std::string(safetensors_name(tensor.dtype()))},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

  write_file_atomically(path, [&](std::ostream& out) {
    std::array<char, kPrefixSize> length{};
    for (std::size_t i = 0; i < kPrefixSize; ++i) {
      length[i] = static_cast<char>((static_cast<std::uint64_t>(text.size()) >> (8 * i)) & 0xFFu);
    }
    out.write(length.data(), static_cast<std::streamsize>(length.size()));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, tensor] : tensors) {
      out.write(reinterpret_cast<const char*>(tensor.bytes()), static_cast<std::streamsize>(tensor.nbytes()));
    }
  });
}

}  // namespace kiln
