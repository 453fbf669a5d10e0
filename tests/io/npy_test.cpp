// .npy read/write: round trips, hand-built files of every supported version and each malformed case.
#include "io/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "safetensors_test_util.h"

namespace kiln {
namespace {

using test::fails_with;

// magic, version major.0, little-endian header length (2 bytes for 1.0, 4 otherwise), the dict
// padded with spaces and a newline to 64 bytes as numpy does, then the data.
std::string npy_bytes(int major, const std::string& dict, std::string_view data) {
  const std::size_t prelude = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prelude + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  for (std::size_t i = 0; i < prelude - 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return bytes + header + std::string(data);
}

Tensor patterned(DType dtype, Shape shape) {
  Tensor tensor(dtype, std::move(shape));
  for (std::size_t i = 0; i < tensor.nbytes(); ++i) {
    tensor.mutable_bytes()[i] = static_cast<std::byte>(dtype == DType::kBool ? i % 2 : (i * 37 + 11) & 0xFF);
  }
  return tensor;
}

void expect_same(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.nbytes(), expected.nbytes());
  if (expected.nbytes() != 0) {
    EXPECT_EQ(std::memcmp(actual.bytes(), expected.bytes(), expected.nbytes()), 0);
  }
}

class Npy : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_ / "array.npy"; }
  ::testing::AssertionResult rejects(std::string_view bytes,
                                     std::initializer_list<std::string_view> needles) {
    test::write_bytes(path(), bytes);
    const auto named = fails_with([&] { read_npy(path()); }, {"array.npy"});
    if (!named) return named;
    return fails_with([&] { read_npy(path()); }, needles);
  }
  test::TempDir dir_;
};

TEST_F(Npy, RoundTripsEverySupportedDType) {
  for (const DType dtype : {DType::kF64, DType::kF32, DType::kF16, DType::kI64, DType::kI32, DType::kI16,
                            DType::kI8, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor tensor = patterned(dtype, {2, 3});
    write_npy(path(), tensor);
    expect_same(read_npy(path()), tensor);
  }
}

TEST_F(Npy, RoundTripsShapes) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{0, 3}, Shape{2, 3, 4}, Shape{1, 1, 1, 1, 7}}) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor tensor = patterned(DType::kF32, shape);
    write_npy(path(), tensor);
    expect_same(read_npy(path()), tensor);
  }
}

TEST_F(Npy, WritesNumpysVersion1Layout) {
  write_npy(path(), patterned(DType::kF32, {5}));
  const std::string bytes = test::read_bytes(path());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_size = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9])
                                                                             << 8;
  EXPECT_EQ((10 + header_size) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_size + 20);
  const std::string header = bytes.substr(10, header_size);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(dir_.list(), std::set<std::string>{"array.npy"});
}

TEST_F(Npy, WritesVersion2WhenTheHeaderOutgrowsVersion1) {
  // 3200 axes of "1000000000000000000, " make a header over 65535 bytes; the leading 0 keeps the
  // array empty. A view, because constructing an owned tensor of this rank is slow.
  Shape shape(3200, 1'000'000'000'000'000'000);
  shape[0] = 0;
  const std::uint8_t unused = 0;
  write_npy(path(), Tensor::view(DType::kU8, shape, &unused, nullptr));
  const std::string bytes = test::read_bytes(path());
  ASSERT_GE(bytes.size(), 12u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  std::size_t header_size = 0;
  for (int i = 11; i >= 8; --i) header_size = header_size << 8 | static_cast<unsigned char>(bytes[i]);
  EXPECT_GT(header_size, 65535u);
  EXPECT_EQ((12 + header_size) % 64, 0u);
  ASSERT_EQ(bytes.size(), 12 + header_size);  // no data: the array is empty
  EXPECT_EQ(bytes.substr(12, 60), "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 100000");
  EXPECT_EQ(bytes.back(), '\n');
}

TEST_F(Npy, ReadsVersion2WithLargeHeader) {
  const std::string dict =
      "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }" + std::string(70000, ' ');
  test::write_bytes(path(), npy_bytes(2, dict, std::string("\x01\x00\xff\xff", 4)));
  const Tensor tensor = read_npy(path());
  ASSERT_EQ(tensor.shape(), Shape{2});
  EXPECT_EQ(tensor.data<std::int16_t>()[0], 1);
  EXPECT_EQ(tensor.data<std::int16_t>()[1], -1);
}

TEST_F(Npy, RejectsDTypesNpyCannotHold) {
  EXPECT_TRUE(fails_with([&] { write_npy(path(), Tensor(DType::kBF16, {2})); }, {"array.npy", "bf16"}));
  EXPECT_TRUE(fails_with([&] { write_npy(path(), Tensor(DType::kF8E4M3, {2})); }, {"array.npy", "e4m3"}));
  EXPECT_TRUE(fails_with([&] { write_npy(path(), Tensor()); }, {"array.npy", "without storage"}));
  EXPECT_TRUE(dir_.list().empty());
}

TEST_F(Npy, ReadsVersion2And3) {
  const float values[3] = {1.0f, -2.0f, 0.5f};
  const std::string data(reinterpret_cast<const char*>(values), sizeof(values));
  for (const int major : {2, 3}) {
    SCOPED_TRACE(major);
    test::write_bytes(path(),
                      npy_bytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data));
    const Tensor tensor = read_npy(path());
    ASSERT_EQ(tensor.shape(), Shape{3});
    EXPECT_EQ(tensor.f32()[1], -2.0f);
  }
}

TEST_F(Npy, ReadsOtherSpellingsOfTheDict) {
  const std::string data(8, '\x01');
  for (const std::string dict : {R"({"descr": "<i4", "shape": (2,), "fortran_order": False})",
                                 "{'shape':(2,),'descr':'<i4','fortran_order':False}",
                                 "{ 'descr' : '<i4' ,\n 'fortran_order' : False , 'shape' : ( 2 , ) , }",
                                 "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }"}) {
    SCOPED_TRACE(dict);
    test::write_bytes(path(), npy_bytes(1, dict, data));
    const Tensor tensor = read_npy(path());
    EXPECT_EQ(tensor.dtype(), DType::kI32);
    EXPECT_EQ(tensor.shape(), Shape{2});
  }
  test::write_bytes(path(),
                    npy_bytes(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 4), }", data));
  EXPECT_EQ(read_npy(path()).dtype(), DType::kI8);
}

TEST_F(Npy, RejectsBadMagicAndVersion) {
  EXPECT_TRUE(rejects("", {"not a .npy file"}));
  EXPECT_TRUE(rejects("\x93NUMP", {"not a .npy file"}));
  // An .npz is a zip archive of .npy files: named as such (io/file_kind.h).
  EXPECT_TRUE(rejects("PK\x03\x04 zip archive", {"this is a zip archive, not a .npy array"}));
  std::string bytes = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "abcd");
  bytes[6] = 4;
  EXPECT_TRUE(rejects(bytes, {"unsupported .npy format version 4.0"}));
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_TRUE(rejects(bytes, {"version 1.1"}));
}

TEST_F(Npy, RejectsUnsupportedArrays) {
  const auto with = [](const std::string& descr, const std::string& order, const std::string& shape) {
    return npy_bytes(1, "{'descr': " + descr + ", 'fortran_order': " + order + ", 'shape': " + shape + ", }",
                     std::string(8, '\0'));
  };
  EXPECT_TRUE(rejects(with("'>f4'", "False", "(2,)"), {"'>f4'", "big-endian"}));
  EXPECT_TRUE(rejects(with("'>i8'", "False", "(1,)"), {"big-endian"}));
  EXPECT_TRUE(rejects(with("'<f4'", "True", "(2,)"), {"Fortran-order"}));
  EXPECT_TRUE(rejects(with("'<c8'", "False", "(1,)"), {"dtype '<c8' is unsupported"}));
  EXPECT_TRUE(rejects(with("'<U2'", "False", "(1,)"), {"dtype '<U2' is unsupported"}));
  EXPECT_TRUE(rejects(with("'|O'", "False", "(1,)"), {"dtype '|O' is unsupported"}));
  EXPECT_TRUE(rejects(with("[('a', '<f4')]", "False", "(2,)"), {"malformed header dict"}));
}

TEST_F(Npy, RejectsMalformedDicts) {
  struct Case {
    const char* dict;
    const char* needle;
  };
  const Case cases[] = {
      {"", "expected '{'"},
      {"'descr': '<f4'", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", "expected a quoted string"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
      {"{'descr: '<f4'}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "unexpected text after"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}}", "unexpected text after"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}",
       "expected a string, True, False or a tuple"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "expected a string, True, False or a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "expected a string, True, False or a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "one-element tuple needs a trailing comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (02,)}", "leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", "expected a non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "integer too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", "expected ',' or ')'"},
      {"{'descr': '<\\f4', 'fortran_order': False, 'shape': (2,)}", "escape sequences"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks 'shape'"},
      {"{'fortran_order': False, 'shape': (2,)}", "lacks 'descr'"},
      {"{'descr': '<f4', 'shape': (2,)}", "lacks 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': True}", "unexpected key 'extra'"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (2,)}", "expected a string, True, False or a tuple"},
      {"{'descr': True, 'fortran_order': False, 'shape': (2,)}", "'descr' must be a string"},
      {"{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,)}", "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': '2'}", "'shape' must be a tuple"},
  };
  for (const Case& bad : cases) {
    SCOPED_TRACE(bad.dict);
    EXPECT_TRUE(rejects(npy_bytes(1, bad.dict, std::string(8, '\0')), {bad.needle}));
  }
}

TEST_F(Npy, RejectsShapesWhoseSizeOverflows) {
  EXPECT_TRUE(
      rejects(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", ""),
              {"more bytes than fit in 64 bits"}));
  EXPECT_TRUE(rejects(
      npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }", ""),
      {"more elements than fit in 64 bits"}));
}

TEST_F(Npy, RejectsTruncatedHeader) {
  const std::string bytes = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "abcd");
  EXPECT_TRUE(rejects(bytes.substr(0, 9), {"truncated", "header length"}));
  EXPECT_TRUE(rejects(bytes.substr(0, 40), {"truncated header", "exceeds the 30 bytes that follow"}));
}

TEST_F(Npy, RejectsWrongDataSize) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_TRUE(rejects(npy_bytes(1, dict, std::string(23, '\0')),
                      {"truncated data", "[2, 3] needs 24 bytes", "holds 23"}));
  EXPECT_TRUE(rejects(npy_bytes(1, dict, std::string(25, '\0')), {"1 unexpected bytes after the data"}));
  EXPECT_TRUE(rejects(npy_bytes(1, dict, ""), {"truncated data"}));
}

TEST_F(Npy, EveryTruncationThrows) {
  write_npy(path(), patterned(DType::kI16, {3, 2}));
  const std::string bytes = test::read_bytes(path());
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE(length);
    test::write_bytes(path(), std::string_view(bytes).substr(0, length));
    EXPECT_TRUE(fails_with([&] { read_npy(path()); }, {"array.npy"}));
  }
}

TEST_F(Npy, RejectsMissingFileAndFolder) {
  EXPECT_TRUE(fails_with([&] { read_npy(dir_ / "absent.npy"); }, {"absent.npy", "no such file"}));
  EXPECT_TRUE(fails_with([&] { read_npy(dir_.path()); }, {"not a regular file"}));
  EXPECT_TRUE(fails_with([&] { write_npy(dir_ / "missing" / "a.npy", Tensor(DType::kF32, {1})); },
                         {"a.npy", "does not exist"}));
}

}  // namespace
}  // namespace kiln
