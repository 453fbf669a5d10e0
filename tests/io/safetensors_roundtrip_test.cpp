// write_safetensors -> SafetensorsFile::open round trips and the layout the writer produces.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "io/safetensors.h"
#include "safetensors_test_util.h"

namespace kiln {
namespace {

using test::fails_with;

constexpr DType kAllDTypes[] = {DType::kF64,    DType::kF32, DType::kF16, DType::kBF16,
                                DType::kF8E4M3, DType::kI64, DType::kI32, DType::kI16,
                                DType::kI8,     DType::kU8,  DType::kBool};

// A tensor whose bytes follow a pattern that depends on `seed`, so mixed-up tensors are caught.
Tensor patterned(DType dtype, Shape shape, int seed) {
  Tensor tensor(dtype, std::move(shape));
  std::byte* bytes = tensor.mutable_bytes();
  for (std::size_t i = 0; i < tensor.nbytes(); ++i) {
    // BOOL holds 0 or 1; everything else any byte.
    const auto value = static_cast<unsigned>(seed * 31 + static_cast<int>(i) * 7 + 3);
    bytes[i] = static_cast<std::byte>(dtype == DType::kBool ? value & 1u : value & 0xFFu);
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

class SafetensorsRoundTrip : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_ / "out.safetensors"; }
  test::TempDir dir_;
};

TEST_F(SafetensorsRoundTrip, EveryDType) {
  std::map<std::string, Tensor> tensors;
  int seed = 0;
  for (const DType dtype : kAllDTypes) {
    tensors.emplace(std::string(safetensors_name(dtype)), patterned(dtype, {3, 5}, seed++));
  }
  write_safetensors(path(), tensors);
  const auto file = SafetensorsFile::open(path());
  ASSERT_EQ(file.names().size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    expect_same(file.tensor(name), tensor);
  }
}

TEST_F(SafetensorsRoundTrip, Metadata) {
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"quote \"q\"", "line\nbreak"}, {"", ""}};
  write_safetensors(path(), {{"x", patterned(DType::kF32, {2}, 1)}}, metadata);
  const auto file = SafetensorsFile::open(path());
  EXPECT_EQ(file.metadata(), metadata);
  EXPECT_EQ(file.names(), std::vector<std::string>{"x"});
}

TEST_F(SafetensorsRoundTrip, ScalarWithEmptyShape) {
  const float value = 3.5f;
  write_safetensors(path(), {{"scale", Tensor::from_f32({}, {&value, 1})}});
  const auto file = SafetensorsFile::open(path());
  EXPECT_EQ(file.tensor("scale").shape(), Shape{});
  EXPECT_EQ(file.tensor("scale").f32()[0], 3.5f);
}

TEST_F(SafetensorsRoundTrip, ZeroSizeTensors) {
  const std::map<std::string, Tensor> tensors = {{"a", patterned(DType::kF32, {0, 3}, 0)},
                                                 {"b", patterned(DType::kI64, {2, 2}, 1)},
                                                 {"c", patterned(DType::kF16, {4, 0}, 2)}};
  write_safetensors(path(), tensors);
  const auto file = SafetensorsFile::open(path());
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    expect_same(file.tensor(name), tensor);
  }
}

TEST_F(SafetensorsRoundTrip, NoTensors) {
  write_safetensors(path(), {});
  EXPECT_TRUE(SafetensorsFile::open(path()).names().empty());
  EXPECT_EQ(test::read_bytes(path()), test::le64(8) + "{}      ");
}

TEST_F(SafetensorsRoundTrip, HeaderIsSortedContiguousAndPadded) {
  write_safetensors(path(),
                    {{"c", patterned(DType::kU8, {3}, 0)},
                     {"a", patterned(DType::kF32, {1}, 1)},
                     {"b", patterned(DType::kI16, {1}, 2)}},
                    {{"format", "pt"}});
  const std::string bytes = test::read_bytes(path());
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(header_size % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_size + 4 + 2 + 3);
  const std::string header = bytes.substr(8, header_size);
  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"I16","shape":[1],"data_offsets":[4,6]},)"
                           R"("c":{"dtype":"U8","shape":[3],"data_offsets":[6,9]}})";
  ASSERT_GE(header.size(), json.size());
  EXPECT_EQ(header.substr(0, json.size()), json);
  EXPECT_EQ(header.substr(json.size()), std::string(header.size() - json.size(), ' '));
  EXPECT_LT(header.size() - json.size(), 8u);
  const auto file = SafetensorsFile::open(path());
  EXPECT_EQ(file.names(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(SafetensorsRoundTrip, ReplacesExistingFile) {
  write_safetensors(path(), {{"old", patterned(DType::kU8, {100}, 0)}});
  write_safetensors(path(), {{"new", patterned(DType::kU8, {2}, 1)}});
  const auto file = SafetensorsFile::open(path());
  EXPECT_EQ(file.names(), std::vector<std::string>{"new"});
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.safetensors"});
}

TEST_F(SafetensorsRoundTrip, RewritesFromViewsOfTheSameFile) {
  const std::map<std::string, Tensor> original = {{"w", patterned(DType::kF32, {64}, 3)}};
  write_safetensors(path(), original);
  {
    const auto file = SafetensorsFile::open(path());
    // The views read the old file while the new one is written beside it and renamed over it.
    write_safetensors(path(), {{"w", file.tensor("w")}, {"w2", file.tensor("w")}});
  }
  const auto file = SafetensorsFile::open(path());
  expect_same(file.tensor("w"), original.at("w"));
  expect_same(file.tensor("w2"), original.at("w"));
}

TEST_F(SafetensorsRoundTrip, RejectsUnwritableInput) {
  EXPECT_TRUE(fails_with(
      [&] {
        write_safetensors(path(), {{"__metadata__", patterned(DType::kU8, {1}, 0)}});
      },
      {"out.safetensors", "'__metadata__'"}));
  EXPECT_TRUE(fails_with(
      [&] {
        write_safetensors(path(), {{"bad\xff", patterned(DType::kU8, {1}, 0)}});
      },
      {"tensor name", "UTF-8"}));
  EXPECT_TRUE(fails_with(
      [&] {
        write_safetensors(path(), {{"empty", Tensor()}});
      },
      {"'empty'", "no storage"}));
  EXPECT_TRUE(fails_with(
      [&] {
        write_safetensors(path(), {}, {{"k", "\xc0"}});
      },
      {"metadata value", "UTF-8"}));
  EXPECT_TRUE(fails_with([&] { write_safetensors(dir_ / "missing" / "x.safetensors", {}); },
                         {"x.safetensors", "does not exist"}));
  EXPECT_TRUE(dir_.list().empty());
}

}  // namespace
}  // namespace kiln
