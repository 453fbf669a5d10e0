// One test per rule of the safetensors format, each on a file crafted byte by byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "io/safetensors.h"
#include "safetensors_test_util.h"

namespace kiln {
namespace {

using test::fails_with;
using test::safetensors_bytes;

class SafetensorsFormat : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_ / "model.safetensors"; }

  SafetensorsFile open_bytes(std::string_view bytes) {
    test::write_bytes(path(), bytes);
    return SafetensorsFile::open(path());
  }
  SafetensorsFile open_file(std::string_view header, std::string_view data) {
    return open_bytes(safetensors_bytes(header, data));
  }
  // Every rejection must name the file as well as the given words.
  ::testing::AssertionResult rejects_bytes(std::string_view bytes,
                                           std::initializer_list<std::string_view> needles) {
    test::write_bytes(path(), bytes);
    const auto named = fails_with([&] { SafetensorsFile::open(path()); }, {"model.safetensors"});
    if (!named) return named;
    return fails_with([&] { SafetensorsFile::open(path()); }, needles);
  }
  ::testing::AssertionResult rejects(std::string_view header, std::string_view data,
                                     std::initializer_list<std::string_view> needles) {
    return rejects_bytes(safetensors_bytes(header, data), needles);
  }

  test::TempDir dir_;
};

// A header with one tensor `w` described by the given JSON fields.
std::string one_tensor(const std::string& fields) { return R"({"w":{)" + fields + "}}"; }

constexpr std::string_view kEightBytes = "\x01\x02\x03\x04\x05\x06\x07\x08";

TEST_F(SafetensorsFormat, AcceptsMinimalFile) {
  const auto file = open_file(one_tensor(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])"), kEightBytes);
  ASSERT_EQ(file.names(), std::vector<std::string>{"w"});
  const Tensor& w = file.tensor("w");
  EXPECT_EQ(w.dtype(), DType::kU8);
  EXPECT_EQ(w.shape(), Shape{8});
  EXPECT_EQ(std::memcmp(w.bytes(), kEightBytes.data(), 8), 0);
  EXPECT_EQ(file.file_size(), 8 + one_tensor(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])").size() + 8);
}

TEST_F(SafetensorsFormat, RejectsFileShorterThanLengthPrefix) {
  EXPECT_TRUE(rejects_bytes("", {"0 bytes", "8-byte header length"}));
  EXPECT_TRUE(rejects_bytes(std::string("\x02\x00\x00", 3), {"3 bytes", "8-byte header length"}));
}

TEST_F(SafetensorsFormat, RejectsHeaderLengthOverLimit) {
  EXPECT_TRUE(rejects_bytes(test::le64(100'000'001) + "{}", {"header length 100000001", "100000000"}));
  EXPECT_TRUE(rejects_bytes(test::le64(UINT64_MAX) + "{}", {"header length", "limit"}));
}

TEST_F(SafetensorsFormat, RejectsHeaderLengthBeyondFile) {
  EXPECT_TRUE(rejects_bytes(test::le64(1000) + "{}", {"header length 1000", "exceeds the 2 bytes"}));
}

TEST_F(SafetensorsFormat, RejectsHeaderThatIsNotUtf8) {
  EXPECT_TRUE(rejects("{\"w\xff\":1}", "", {"UTF-8", "byte 3"}));
  EXPECT_TRUE(rejects("{\"\xc0\xaf\":1}", "", {"UTF-8"}));      // overlong '/'
  EXPECT_TRUE(rejects("{\"\xed\xa0\x80\":1}", "", {"UTF-8"}));  // surrogate
  EXPECT_TRUE(rejects("{\"\xe2\x82\":1}", "", {"UTF-8"}));      // cut sequence
}

TEST_F(SafetensorsFormat, AcceptsUtf8Names) {
  const std::string header = one_tensor(R"("dtype":"U8","shape":[0],"data_offsets":[0,0])");
  const std::string name = "w\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // w, e-acute, euro sign, an emoji
  const auto file = open_file(R"({")" + name + header.substr(3), "");
  EXPECT_TRUE(file.contains(name));
}

TEST_F(SafetensorsFormat, RejectsHeaderThatIsNotJson) {
  EXPECT_TRUE(rejects(R"({"w": })", "", {"not valid JSON"}));
  EXPECT_TRUE(rejects(R"({"w": {})", "", {"not valid JSON"}));
  EXPECT_TRUE(rejects(R"({} x)", "", {"not valid JSON"}));
  EXPECT_TRUE(rejects(std::string("{}\0\0\0\0\0\0", 8), "", {"not valid JSON", "NUL byte at byte 2"}));
  EXPECT_TRUE(rejects(std::string("{\"w\0\":1}", 8), "", {"not valid JSON", "NUL"}));
}

TEST_F(SafetensorsFormat, RejectsHeaderThatIsNotAnObject) {
  EXPECT_TRUE(rejects("", "", {"JSON object"}));
  EXPECT_TRUE(rejects("[]", "", {"JSON object"}));
  EXPECT_TRUE(rejects(R"("w")", "", {"JSON object"}));
  EXPECT_TRUE(rejects(" {}", "", {"beginning with '{'"}));
}

TEST_F(SafetensorsFormat, AcceptsTrailingSpacesInHeader) {
  const auto file =
      open_file(one_tensor(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])") + "       ", kEightBytes);
  EXPECT_TRUE(file.contains("w"));
  EXPECT_TRUE(open_file("{}      ", "").names().empty());
}

TEST_F(SafetensorsFormat, ReadsMetadata) {
  const auto file = open_file(R"({"__metadata__":{"format":"pt","note":""}})", "");
  EXPECT_TRUE(file.names().empty());
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", ""}}));
  EXPECT_FALSE(file.contains("__metadata__"));
}

TEST_F(SafetensorsFormat, RejectsMetadataThatIsNotAnObject) {
  EXPECT_TRUE(rejects(R"({"__metadata__":"pt"})", "", {"__metadata__", "object of strings"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":["pt"]})", "", {"__metadata__", "object of strings"}));
}

TEST_F(SafetensorsFormat, RejectsMetadataValueThatIsNotAString) {
  EXPECT_TRUE(
      rejects(R"({"__metadata__":{"epoch":3}})", "", {"__metadata__ key 'epoch'", "expected a string"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":{"x":{"y":"z"}}})", "", {"__metadata__ key 'x'"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":{"x":null}})", "", {"__metadata__ key 'x'"}));
}

TEST_F(SafetensorsFormat, RejectsEntryThatIsNotAnObject) {
  EXPECT_TRUE(rejects(R"({"w":1})", "", {"tensor 'w'", "expected an object"}));
  EXPECT_TRUE(rejects(R"({"w":["F32",[1],[0,4]]})", "", {"tensor 'w'", "expected an object"}));
}

TEST_F(SafetensorsFormat, RejectsMissingFields) {
  EXPECT_TRUE(
      rejects(one_tensor(R"("shape":[8],"data_offsets":[0,8])"), kEightBytes, {"'w'", "missing 'dtype'"}));
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","data_offsets":[0,8])"), kEightBytes, {"'w'", "missing 'shape'"}));
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","shape":[8])"), kEightBytes, {"'w'", "missing 'data_offsets'"}));
}

TEST_F(SafetensorsFormat, RejectsUnexpectedField) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[8],"data_offsets":[0,8],"stride":[1])"),
                      kEightBytes, {"'w'", "unexpected key 'stride'"}));
}

TEST_F(SafetensorsFormat, RejectsUnsupportedDType) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"F8_E5M2","shape":[8],"data_offsets":[0,8])"), kEightBytes,
                      {"'w'", "dtype 'F8_E5M2' is unsupported"}));
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"f32","shape":[2],"data_offsets":[0,8])"), kEightBytes,
                      {"dtype 'f32' is unsupported"}));
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U64","shape":[1],"data_offsets":[0,8])"), kEightBytes,
                      {"dtype 'U64' is unsupported"}));
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":4,"shape":[2],"data_offsets":[0,8])"), kEightBytes,
                      {"'w'", "'dtype' must be a string"}));
}

TEST_F(SafetensorsFormat, AcceptsEveryKnownDType) {
  for (const char* name : {"F64", "F32", "F16", "BF16", "F8_E4M3", "I64", "I32", "I16", "I8", "U8", "BOOL"}) {
    SCOPED_TRACE(name);
    const auto dtype = dtype_from_safetensors_name(name);
    ASSERT_TRUE(dtype.has_value());
    const std::size_t count = 8 / dtype_size(*dtype);
    const auto file = open_file(one_tensor(std::string(R"("dtype":")") + name + R"(","shape":[)" +
                                           std::to_string(count) + R"(],"data_offsets":[0,8])"),
                                kEightBytes);
    EXPECT_EQ(file.tensor("w").dtype(), *dtype);
  }
}

TEST_F(SafetensorsFormat, RejectsBadShape) {
  const std::string offsets = R"(,"data_offsets":[0,8])";
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","shape":8)" + offsets), kEightBytes, {"'w'", "'shape' must be"}));
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[-8])" + offsets), kEightBytes, {"'w'", "'shape'"}));
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","shape":[8.0])" + offsets), kEightBytes, {"'w'", "'shape'"}));
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","shape":["8"])" + offsets), kEightBytes, {"'w'", "'shape'"}));
  EXPECT_TRUE(
      rejects(one_tensor(R"("dtype":"U8","shape":[[8]])" + offsets), kEightBytes, {"'w'", "'shape'"}));
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[9223372036854775808])" + offsets), kEightBytes,
                      {"'w'", "too large"}));
}

TEST_F(SafetensorsFormat, RejectsBadDataOffsets) {
  const std::string head = R"("dtype":"U8","shape":[8],"data_offsets":)";
  EXPECT_TRUE(rejects(one_tensor(head + "8"), kEightBytes, {"'w'", "'data_offsets' must be"}));
  EXPECT_TRUE(rejects(one_tensor(head + "[8]"), kEightBytes, {"'w'", "'data_offsets' must be"}));
  EXPECT_TRUE(rejects(one_tensor(head + "[0,8,8]"), kEightBytes, {"'w'", "'data_offsets' must be"}));
  EXPECT_TRUE(rejects(one_tensor(head + "[-1,8]"), kEightBytes, {"'w'", "'data_offsets'"}));
  EXPECT_TRUE(rejects(one_tensor(head + "[0,8.0]"), kEightBytes, {"'w'", "'data_offsets'"}));
  EXPECT_TRUE(rejects(one_tensor(head + "[0,\"8\"]"), kEightBytes, {"'w'", "'data_offsets'"}));
  EXPECT_TRUE(
      rejects(one_tensor(head + "[8,0]"), kEightBytes, {"'w'", "data_offsets [8, 0] begin after they end"}));
}

TEST_F(SafetensorsFormat, RejectsSizeThatDoesNotMatchShape) {
  const std::string data(96, '\0');
  EXPECT_TRUE(rejects(R"({"fc.weight":{"dtype":"F32","shape":[10,4],"data_offsets":[0,96]}})", data,
                      {"tensor 'fc.weight': data_offsets [0, 96] hold 96 bytes, but F32 [10, 4] needs 160"}));
}

TEST_F(SafetensorsFormat, RejectsShapeWhoseByteCountOverflows) {
  // 2^62 elements fit in int64, but 2^62 * 4 bytes do not fit in 64 bits.
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0])"), "",
                      {"'w'", "more bytes than fit in 64 bits"}));
  // 2^32 * 2^32 wraps to 0 in 64 bits, which would match empty offsets if unchecked.
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0])"), "",
                      {"'w'", "more elements than fit in 64 bits"}));
  // A zero extent after an overflowing prefix: later numel() calls would overflow.
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0])"),
                      "", {"'w'", "more elements than fit in 64 bits"}));
}

TEST_F(SafetensorsFormat, RejectsOffsetsBeyondDataSection) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[16],"data_offsets":[0,16])"), kEightBytes,
                      {"'w'", "end beyond the data section, which holds 8 bytes"}));
  EXPECT_TRUE(rejects(
      one_tensor(R"("dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615])"),
      kEightBytes, {"'w'", "beyond the data section"}));
}

TEST_F(SafetensorsFormat, RejectsOverlappingTensors) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"U8","shape":[16],"data_offsets":[8,24]}})";
  EXPECT_TRUE(rejects(header, std::string(24, 'x'), {"tensor 'b'", "overlap tensor 'a' [0, 16]"}));
  const std::string same = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})";
  EXPECT_TRUE(rejects(same, kEightBytes, {"overlap"}));
}

TEST_F(SafetensorsFormat, RejectsZeroSizeTensorInsideAnother) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                             R"("z":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})";
  EXPECT_TRUE(rejects(header, kEightBytes, {"tensor 'z'", "overlap tensor 'a'"}));
}

TEST_F(SafetensorsFormat, AcceptsZeroSizeTensorsAtTheSameOffset) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                             R"("y":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},)"
                             R"("z":{"dtype":"U8","shape":[0],"data_offsets":[8,8]},)"
                             R"("e":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})";
  const auto file = open_file(header, kEightBytes);
  EXPECT_EQ(file.names(), (std::vector<std::string>{"e", "a", "y", "z"}));
  EXPECT_EQ(file.tensor("y").numel(), 0);
}

TEST_F(SafetensorsFormat, RejectsGapBetweenTensors) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"U8","shape":[8],"data_offsets":[12,20]}})";
  EXPECT_TRUE(rejects(header, std::string(20, 'x'), {"tensor 'b'", "gap of 4 bytes after tensor 'a'"}));
}

TEST_F(SafetensorsFormat, RejectsGapBeforeFirstTensor) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[4],"data_offsets":[4,8])"), kEightBytes,
                      {"tensor 'w'", "gap", "first 4 bytes"}));
}

TEST_F(SafetensorsFormat, RejectsBytesAfterLastTensor) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","shape":[4],"data_offsets":[0,4])"), kEightBytes,
                      {"data section holds 8 bytes", "'w' ends at 4", "after the last tensor"}));
  EXPECT_TRUE(rejects("{}", kEightBytes, {"data section holds 8 bytes", "no tensors"}));
}

TEST_F(SafetensorsFormat, RejectsDuplicateTensorNames) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("w":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})";
  EXPECT_TRUE(rejects(header, kEightBytes, {"duplicate tensor name 'w'"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":{},"__metadata__":{}})", "", {"duplicate", "'__metadata__'"}));
}

TEST_F(SafetensorsFormat, RejectsDuplicateKeysInsideObjects) {
  EXPECT_TRUE(rejects(one_tensor(R"("dtype":"U8","dtype":"I8","shape":[8],"data_offsets":[0,8])"),
                      kEightBytes, {"'w'", "duplicate key 'dtype'"}));
  EXPECT_TRUE(rejects(R"({"__metadata__":{"k":"a","k":"b"}})", "", {"'__metadata__'", "duplicate key 'k'"}));
}

TEST_F(SafetensorsFormat, RejectsDeeplyNestedHeader) {
  const std::string header = R"({"w":)" + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_TRUE(rejects(header, "", {"nests more than 64 levels"}));
}

TEST_F(SafetensorsFormat, KeepsMessagesOnOneLine) {
  // fails_with checks that the message has no newline although the name holds one.
  EXPECT_TRUE(rejects(R"({"a\nb":1})", "", {"tensor 'a\\x0ab'"}));
}

TEST_F(SafetensorsFormat, OrdersNamesByOffset) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},)"
                             R"("z":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  const auto file = open_file(header, kEightBytes);
  EXPECT_EQ(file.names(), (std::vector<std::string>{"z", "a"}));
  EXPECT_EQ(std::memcmp(file.tensor("a").bytes(), kEightBytes.data() + 4, 4), 0);
}

TEST_F(SafetensorsFormat, MissingTensorNamesTheKey) {
  const auto file = open_file("{}", "");
  EXPECT_TRUE(fails_with([&] { file.tensor("head.fc.weight"); }, {"model.safetensors", "'head.fc.weight'"}));
}

TEST_F(SafetensorsFormat, RejectsMissingFileAndFolder) {
  EXPECT_TRUE(fails_with([&] { SafetensorsFile::open(dir_ / "absent.safetensors"); },
                         {"absent.safetensors", "cannot open"}));
  EXPECT_TRUE(fails_with([&] { SafetensorsFile::open(dir_.path()); }, {"not a regular file"}));
}

TEST_F(SafetensorsFormat, CopiesMisalignedTensors) {
  // The header is padded to a multiple of 8, so the data section starts 8-byte aligned in the mapping;
  // "f" at data offset 1 and "g" at 9 are misaligned for F32.
  std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},)"
                       R"("g":{"dtype":"F32","shape":[1],"data_offsets":[9,13]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const float values[3] = {1.5f, -2.25f, 7.0f};
  std::string data(13, '\0');
  data[0] = 'b';
  std::memcpy(data.data() + 1, values, 12);
  auto file = open_file(header, data);
  const Tensor& f = file.tensor("f");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f.bytes()) % alignof(float), 0u);
  EXPECT_EQ(f.data<float>()[0], 1.5f);
  EXPECT_EQ(f.data<float>()[1], -2.25f);
  EXPECT_EQ(file.tensor("g").f32()[0], 7.0f);
  // Copies and views alike are read-only.
  for (const char* name : {"b", "f"}) {
    Tensor tensor = file.tensor(name);
    EXPECT_TRUE(fails_with([&] { tensor.mutable_bytes(); }, {"read-only"})) << name;
  }
}

TEST_F(SafetensorsFormat, LoadsHighRankMisalignedTensorQuickly) {
  // 100000 axes of extent 1: copying must not cost time quadratic in the rank.
  std::string shape = "1";
  for (int i = 1; i < 100000; ++i) shape += ",1";
  std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("f":{"dtype":"F32","shape":[)" +
                       shape + R"(],"data_offsets":[1,5]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const auto file = open_file(header, std::string("b\0\0\x80\x3f", 5));
  EXPECT_EQ(file.tensor("f").rank(), 100000u);
  EXPECT_EQ(file.tensor("f").data<float>()[0], 1.0f);
}

TEST_F(SafetensorsFormat, ViewsOutliveTheFileObjectAndTheFile) {
  Tensor kept;
  {
    const auto file = open_file(one_tensor(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])"), kEightBytes);
    kept = file.tensor("w");
  }
  std::filesystem::remove(path());
  EXPECT_EQ(std::memcmp(kept.bytes(), kEightBytes.data(), 8), 0);
}

}  // namespace
}  // namespace kiln
