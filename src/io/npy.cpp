#include "io/npy.h"

#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/file_kind.h"

namespace kiln {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kPreludeV1 = 10;  // magic, major, minor, u16 header length
constexpr std::size_t kPreludeV2 = 12;  // magic, major, minor, u32 header length
constexpr std::size_t kHeaderAlignment = 64;
constexpr std::string_view kSupportedDescrs = "<f8, <f4, <f2, <i8, <i4, <i2, |i1, |u1, |b1";

// Header strings in messages, cut short: a damaged header can hold a string of any length.
std::string shortened(std::string_view text) {
  constexpr std::size_t kMaxLength = 40;
  return text.size() <= kMaxLength ? std::string(text) : cat(text.substr(0, kMaxLength), "...");
}

struct DescrInfo {
  std::string_view descr;
  DType dtype;
};

// The first entry for a dtype is what write_npy emits; the '<' spellings of the one-byte types are
// accepted on read because numpy accepts them too.
constexpr std::array<DescrInfo, 12> kDescrs = {{
    {"<f8", DType::kF64},
    {"<f4", DType::kF32},
    {"<f2", DType::kF16},
    {"<i8", DType::kI64},
    {"<i4", DType::kI32},
    {"<i2", DType::kI16},
    {"|i1", DType::kI8},
    {"|u1", DType::kU8},
    {"|b1", DType::kBool},
    {"<i1", DType::kI8},
    {"<u1", DType::kU8},
    {"<b1", DType::kBool},
}};

// The values a .npy header dict holds: strings, booleans and tuples of non-negative integers.
struct PyValue {
  enum class Kind { kString, kBool, kTuple };
  Kind kind = Kind::kString;
  std::string text;
  bool flag = false;
  std::vector<std::int64_t> items;
};

// A strict parser for the Python dict literal numpy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Anything else Python could evaluate (expressions, escapes, nested dicts) is rejected.
class HeaderParser {
 public:
  HeaderParser(const std::string& file, std::string_view text) : file_(file), text_(text) {}

  std::map<std::string, PyValue> parse_dict() {
    std::map<std::string, PyValue> dict;
    skip_space();
    expect('{');
    skip_space();
    while (!accept('}')) {
      const std::size_t key_at = pos_;
      const std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (!dict.emplace(key, parse_value()).second) {
        error(key_at, cat("duplicate key '", shortened(key), "'"));
      }
      skip_space();
      if (accept(',')) {
        skip_space();
      } else if (!at('}')) {
        error(pos_, "expected ',' or '}'");
      }
    }
    skip_space();
    if (pos_ != text_.size()) error(pos_, "unexpected text after the closing '}'");
    return dict;
  }

 private:
  [[noreturn]] void error(std::size_t at_offset, const std::string& what) const {
    fail(file_, ": malformed header dict: ", what, " at character ", at_offset);
  }

  bool at(char ch) const { return pos_ < text_.size() && text_[pos_] == ch; }
  bool accept(char ch) {
    if (!at(ch)) return false;
    ++pos_;
    return true;
  }
  void expect(char ch) {
    if (!accept(ch)) error(pos_, cat("expected '", ch, "'"));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string parse_string() {
    if (!at('\'') && !at('"')) error(pos_, "expected a quoted string");
    const char quote = text_[pos_++];
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) error(pos_, "unterminated string");
      const char ch = text_[pos_++];
      if (ch == quote) return value;
      if (ch == '\\') error(pos_ - 1, "escape sequences are not supported");
      if (static_cast<unsigned char>(ch) < 0x20) error(pos_ - 1, "control character in a string");
      value += ch;
    }
  }

  PyValue parse_value() {
    PyValue value;
    if (at('\'') || at('"')) {
      value.text = parse_string();
    } else if (text_.substr(pos_, 4) == "True") {
      value.kind = PyValue::Kind::kBool, value.flag = true, pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      value.kind = PyValue::Kind::kBool, value.flag = false, pos_ += 5;
    } else if (at('(')) {
      value.kind = PyValue::Kind::kTuple;
      value.items = parse_tuple();
    } else {
      error(pos_, "expected a string, True, False or a tuple");
    }
    return value;
  }

  std::vector<std::int64_t> parse_tuple() {
    expect('(');
    skip_space();
    std::vector<std::int64_t> items;
    bool trailing_comma = false;
    while (!accept(')')) {
      items.push_back(parse_integer());
      skip_space();
      trailing_comma = accept(',');
      skip_space();
      if (!trailing_comma && !at(')')) error(pos_, "expected ',' or ')' in a tuple");
    }
    // "(5)" is the integer 5 in Python, not a tuple.
    if (items.size() == 1 && !trailing_comma) error(pos_, "a one-element tuple needs a trailing comma");
    return items;
  }

  std::int64_t parse_integer() {
    const std::size_t start = pos_;
    if (at('-')) error(pos_, "negative integer");
    std::int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, digit, &value)) {
        error(start, "integer too large");
      }
      ++pos_;
    }
    if (pos_ == start) error(pos_, "expected a non-negative integer");
    if (text_[start] == '0' && pos_ - start > 1) error(start, "integer with a leading zero");
    accept('L');  // Python 2's long suffix, found in files written by old numpy versions
    return value;
  }

  const std::string& file_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

struct NpyHeader {
  DType dtype = DType::kF32;
  Shape shape;
};

NpyHeader interpret_header(const std::string& file, std::string_view text) {
  std::map<std::string, PyValue> dict = HeaderParser(file, text).parse_dict();
  for (const auto& [key, value] : dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      fail(file, ": header has unexpected key '", shortened(key),
           "' (expected descr, fortran_order and shape)");
    }
  }
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    require(dict.count(key) != 0, file, ": header lacks '", key, "'");
  }
  const PyValue& descr = dict["descr"];
  require(descr.kind == PyValue::Kind::kString, file, ": header 'descr' must be a string such as '<f4'");
  if (!descr.text.empty() && descr.text.front() == '>') {
    fail(file, ": dtype '", shortened(descr.text), "' is big-endian; only little-endian data is supported");
  }
  const PyValue& fortran_order = dict["fortran_order"];
  require(fortran_order.kind == PyValue::Kind::kBool, file, ": header 'fortran_order' must be True or False");
  require(!fortran_order.flag, file,
          ": Fortran-order (column-major) arrays are unsupported; save a C-order array");
  const PyValue& shape = dict["shape"];
  require(shape.kind == PyValue::Kind::kTuple, file, ": header 'shape' must be a tuple of integers");

  NpyHeader header;
  header.shape = shape.items;
  for (const auto& entry : kDescrs) {
    if (entry.descr == descr.text) {
      header.dtype = entry.dtype;
      return header;
    }
  }
  fail(file, ": dtype '", shortened(descr.text), "' is unsupported (supported: ", kSupportedDescrs, ")");
}

std::uint64_t load_le(const char* bytes, std::size_t count) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < count; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

// if/fail rather than require: require builds its message (here shape_str) even when the check passes.
std::uint64_t data_bytes(const std::string& file, const NpyHeader& header) {
  std::int64_t numel = 1;
  for (const auto extent : header.shape) {
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      fail(file, ": shape ", shape_str(header.shape), " has more elements than fit in 64 bits");
    }
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(numel), dtype_size(header.dtype), &bytes)) {
    fail(file, ": shape ", shape_str(header.shape), " needs more bytes than fit in 64 bits");
  }
  return bytes;
}

// Reads exactly `count` bytes or fails naming what was being read.
void read_exactly(std::ifstream& in, const std::string& file, char* out, std::uint64_t count,
                  const char* what) {
  in.read(out, static_cast<std::streamsize>(count));
  require(static_cast<std::uint64_t>(in.gcount()) == count, file, ": truncated ", what, ": expected ", count,
          " bytes, found ", in.gcount());
}

std::string_view descr_for(DType dtype) {
  for (const auto& entry : kDescrs) {
    if (entry.dtype == dtype) return entry.descr;
  }
  return {};
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  require(std::filesystem::exists(status), file, ": no such file");
  // Checked before opening: an ifstream on a FIFO would wait for a writer.
  require(std::filesystem::is_regular_file(status), file, ": not a regular file");
  const std::uint64_t file_size = std::filesystem::file_size(path, error);
  require(!error, file, ": cannot read the file size: ", error.message());
  std::ifstream in(path, std::ios::binary);
  require(in.is_open(), file, ": cannot open for reading");

  std::array<char, kPreludeV2> prelude{};
  const std::size_t magic_size = kMagic.size() + 2;
  read_exactly(in, file, prelude.data(), std::min<std::uint64_t>(file_size, magic_size), "magic");
  if (file_size < magic_size || std::string_view(prelude.data(), kMagic.size()) != kMagic) {
    const FileKind kind = sniff_file_kind(path);
    if (kind != FileKind::kUnknown)
      fail(file, ": this is ", file_kind_description(kind), ", not a .npy array");
    fail(file, ": not a .npy file (it does not start with \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(prelude[6]);
  const int minor = static_cast<unsigned char>(prelude[7]);
  require((major == 1 || major == 2 || major == 3) && minor == 0, file, ": unsupported .npy format version ",
          major, ".", minor, " (supported: 1.0, 2.0, 3.0)");
  const std::size_t prelude_size = major == 1 ? kPreludeV1 : kPreludeV2;
  require(file_size >= prelude_size, file, ": truncated: ", file_size, " bytes, the header length needs ",
          prelude_size);
  read_exactly(in, file, prelude.data() + magic_size, prelude_size - magic_size, "header length");
  const std::uint64_t header_size = load_le(prelude.data() + magic_size, prelude_size - magic_size);
  require(header_size <= file_size - prelude_size, file, ": truncated header: header length ", header_size,
          " exceeds the ", file_size - prelude_size, " bytes that follow");

  std::string text(header_size, '\0');
  read_exactly(in, file, text.data(), header_size, "header");
  const NpyHeader header = interpret_header(file, text);

  const std::uint64_t expected = data_bytes(file, header);
  const std::uint64_t available = file_size - prelude_size - header_size;
  require(available >= expected, file, ": truncated data: ", dtype_name(header.dtype), " ",
          shape_str(header.shape), " needs ", expected, " bytes, the file holds ", available);
  require(available == expected, file, ": ", available - expected, " unexpected bytes after the data of ",
          dtype_name(header.dtype), " ", shape_str(header.shape));

  Tensor tensor(header.dtype, header.shape);
  read_exactly(in, file, reinterpret_cast<char*>(tensor.mutable_bytes()), expected, "data");
  return tensor;
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const std::string file = path.string();
  require(!tensor.empty(), file, ": cannot write a tensor without storage");
  const std::string_view descr = descr_for(tensor.dtype());
  require(!descr.empty(), file, ": .npy has no ", dtype_name(tensor.dtype()),
          " type; convert the tensor (e.g. to f32) first");

  // Python's tuple repr: (), (3,), (2, 3).
  std::string shape;
  for (std::size_t i = 0; i < tensor.rank(); ++i) shape += cat(i == 0 ? "" : ", ", tensor.dim(i));
  if (tensor.rank() == 1) shape += ",";
  std::string dict = cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", shape, "), }");

  // numpy pads with spaces and a final newline so the data starts 64-byte aligned; version 2.0 is
  // only needed when the header outgrows version 1.0's u16 length.
  const auto padded = [&](std::size_t prelude) {
    const std::size_t unpadded = prelude + dict.size() + 1;
    return dict.size() + (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment + 1;
  };
  std::size_t prelude = kPreludeV1;
  std::size_t header_size = padded(prelude);
  if (header_size > 0xFFFF) {
    prelude = kPreludeV2;
    header_size = padded(prelude);
    require(header_size <= 0xFFFFFFFFu, file, ": header of ", header_size, " bytes is too large for .npy");
  }
  std::string header = dict;
  header.resize(header_size - 1, ' ');
  header += '\n';

  write_file_atomically(path, [&](std::ostream& out) {
    out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
    out.put(static_cast<char>(prelude == kPreludeV1 ? 1 : 2));
    out.put(0);
    for (std::size_t i = 0; i < prelude - kMagic.size() - 2; ++i) {
      out.put(static_cast<char>((header_size >> (8 * i)) & 0xFFu));
    }
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(tensor.bytes()), static_cast<std::streamsize>(tensor.nbytes()));
  });
}

}  // namespace kiln
