#include "core/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"

namespace kiln {
namespace {

// Runs `body`, which must throw kiln::Error, and returns the message.
template <typename Body>
std::string error_message(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename T>
Tensor tensor_of(DType dtype, const std::vector<T>& values) {
  Tensor tensor(dtype, {static_cast<std::int64_t>(values.size())});
  EXPECT_EQ(tensor.nbytes(), values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(tensor.mutable_bytes(), values.data(), values.size() * sizeof(T));
  return tensor;
}

template <typename T>
std::vector<T> values_of(const Tensor& tensor) {
  std::vector<T> values(static_cast<std::size_t>(tensor.numel()));
  EXPECT_EQ(tensor.nbytes(), values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), tensor.bytes(), tensor.nbytes());
  return values;
}

TEST(Shape, StrAndNumel) {
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_str({0}), "[0]");
  EXPECT_EQ(shape_str({1, 3, 224, 224}), "[1, 3, 224, 224]");
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 0, 5}), 0);
  EXPECT_EQ(shape_numel({1, 3, 224, 224}), 150528);
  const std::string message = error_message([] {
    shape_numel({std::int64_t{1} << 40, std::int64_t{1} << 40});
  });
  EXPECT_TRUE(contains(message, "[1099511627776, 1099511627776]")) << message;
}

TEST(Tensor, OwnedStorageIsZeroedAndWritable) {
  Tensor tensor(DType::kF32, {2, 3});
  EXPECT_FALSE(tensor.empty());
  EXPECT_EQ(tensor.dtype(), DType::kF32);
  EXPECT_EQ(tensor.rank(), 2u);
  EXPECT_EQ(tensor.dim(0), 2);
  EXPECT_EQ(tensor.dim(1), 3);
  EXPECT_THROW(tensor.dim(2), std::out_of_range);
  EXPECT_EQ(tensor.numel(), 6);
  EXPECT_EQ(tensor.nbytes(), 24u);
  for (const float value : tensor.f32()) EXPECT_EQ(value, 0.0f);
  tensor.mutable_f32()[4] = 2.5f;
  EXPECT_EQ(tensor.f32()[4], 2.5f);
  EXPECT_EQ(tensor.data<float>()[4], 2.5f);
  tensor.mutable_data<float>()[0] = -1.0f;
  EXPECT_EQ(tensor.f32()[0], -1.0f);
}

TEST(Tensor, F32AccessorsCheckTheDtype) {
  Tensor tensor(DType::kF16, {2});
  const std::string message = error_message([&] { (void)tensor.f32(); });
  EXPECT_EQ(message, "expected an f32 tensor, got f16");
  EXPECT_THROW(tensor.mutable_f32(), Error);
}

TEST(Tensor, FromF32CopiesAndChecksTheCount) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  const Tensor tensor = Tensor::from_f32({3, 2}, values);
  EXPECT_EQ(std::vector<float>(tensor.f32().begin(), tensor.f32().end()), values);
  const std::string message = error_message([&] { Tensor::from_f32({4, 2}, values); });
  EXPECT_EQ(message, "from_f32: 6 values for shape [4, 2]; expected 8");
}

TEST(Tensor, NegativeAndOverflowingShapesAreRejected) {
  const std::string message = error_message([] { Tensor(DType::kF32, {2, -1}); });
  EXPECT_TRUE(contains(message, "[2, -1]") && contains(message, "negative")) << message;
  EXPECT_THROW(Tensor(DType::kF32, {std::int64_t{1} << 40, std::int64_t{1} << 40}), Error);
  // 2^61 elements of 8 bytes is 2^64 bytes: the element count fits, the byte count does not.
  EXPECT_THROW(Tensor(DType::kF64, {std::int64_t{1} << 61}), Error);
}

TEST(Tensor, ViewsAreReadOnlyAndKeepTheirStorageAlive) {
  auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  const float* raw = storage->data();
  Tensor view = Tensor::view(DType::kF32, {2, 2}, raw, storage);
  storage.reset();  // the view's keep-alive now holds the only reference
  EXPECT_EQ(view.bytes(), reinterpret_cast<const std::byte*>(raw));
  EXPECT_EQ(view.f32()[3], 4.0f);
  const std::string message = error_message([&] { view.mutable_bytes(); });
  EXPECT_EQ(message, "tensor is a read-only view; clone() it before writing");
  EXPECT_THROW(view.mutable_f32(), Error);
  EXPECT_THROW(view.mutable_data<float>(), Error);
  // Reshaping a view keeps it a read-only view of the same bytes.
  Tensor flat = view.reshaped({4});
  EXPECT_EQ(flat.bytes(), view.bytes());
  EXPECT_THROW(flat.mutable_bytes(), Error);
  // A clone is owned and writable, and leaves the view alone.
  Tensor copy = view.clone();
  EXPECT_NE(copy.bytes(), view.bytes());
  copy.mutable_f32()[0] = 100.0f;
  EXPECT_EQ(view.f32()[0], 1.0f);
  EXPECT_EQ(copy.f32()[1], 2.0f);
}

TEST(Tensor, ViewRejectsBadInput) {
  const std::vector<float> values(4);
  EXPECT_THROW(Tensor::view(DType::kF32, {-4}, values.data(), nullptr), Error);
  EXPECT_THROW(Tensor::view(DType::kF32, {4}, nullptr, nullptr), Error);
}

TEST(Tensor, ReshapeSharesStorageAndChecksTheCount) {
  Tensor tensor(DType::kI32, {2, 6});
  Tensor reshaped = tensor.reshaped({3, 4});
  EXPECT_EQ(reshaped.shape(), (Shape{3, 4}));
  EXPECT_EQ(reshaped.bytes(), tensor.bytes());
  reshaped.mutable_data<std::int32_t>()[11] = 7;  // owned storage stays writable and shared
  EXPECT_EQ(tensor.data<std::int32_t>()[11], 7);
  EXPECT_EQ(tensor.reshaped({12}).rank(), 1u);
  EXPECT_EQ(tensor.reshaped({1, 12, 1}).rank(), 3u);
  const std::string message = error_message([&] { tensor.reshaped({5, 2}); });
  EXPECT_EQ(message, "cannot reshape [2, 6] to [5, 2]: expected 12 elements, got 10");
  // Two negative extents multiply to the right count but are still no shape.
  EXPECT_THROW(tensor.reshaped({-3, -4}), Error);
  const Tensor scalar(DType::kF32, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.reshaped({1, 1}).numel(), 1);
}

TEST(Tensor, CloneIsIndependent) {
  Tensor original = Tensor::from_f32({3}, std::vector<float>{1, 2, 3});
  Tensor copy = original.clone();
  copy.mutable_f32()[0] = -5.0f;
  original.mutable_f32()[2] = 9.0f;
  EXPECT_EQ(original.f32()[0], 1.0f);
  EXPECT_EQ(copy.f32()[2], 3.0f);
  EXPECT_EQ(copy.shape(), original.shape());
  EXPECT_EQ(copy.dtype(), original.dtype());
}

TEST(Tensor, ZeroSizeTensorsWork) {
  Tensor tensor(DType::kF32, {0, 3});
  EXPECT_FALSE(tensor.empty());  // has (zero bytes of) storage, unlike a default tensor
  EXPECT_NE(tensor.bytes(), nullptr);
  EXPECT_EQ(tensor.numel(), 0);
  EXPECT_EQ(tensor.nbytes(), 0u);
  EXPECT_TRUE(tensor.f32().empty());
  EXPECT_EQ(tensor.clone().numel(), 0);
  EXPECT_EQ(tensor.to(DType::kF16).shape(), (Shape{0, 3}));
  EXPECT_EQ(tensor.to(DType::kI8).nbytes(), 0u);
  EXPECT_EQ(tensor.reshaped({3, 0, 7}).numel(), 0);
  EXPECT_THROW(tensor.reshaped({1}), Error);
  EXPECT_EQ(Tensor::from_f32({0}, {}).numel(), 0);
  const std::vector<float> backing(1);
  EXPECT_EQ(Tensor::view(DType::kF32, {0}, backing.data(), nullptr).numel(), 0);
}

TEST(Tensor, DefaultTensorHasNoData) {
  Tensor none;
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none.clone().empty());
  EXPECT_TRUE(none.to(DType::kF16).empty());
  EXPECT_THROW((void)none.f32(), Error);
  EXPECT_THROW(none.mutable_bytes(), Error);
  EXPECT_THROW(none.reshaped({1}), Error);
}

// ---- to() ----

TEST(TensorTo, FloatsFollowTheScalarConversions) {
  const std::vector<float> values = {0.0f,
                                     -0.0f,
                                     1.0f,
                                     -2.5f,
                                     0.1f,
                                     1e-30f,
                                     0x1p-140f,
                                     65520.0f,
                                     500.0f,
                                     -1e30f,
                                     std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN()};
  const Tensor source = Tensor::from_f32({static_cast<std::int64_t>(values.size())}, values);
  const auto f16 = values_of<std::uint16_t>(source.to(DType::kF16));
  const auto bf16 = values_of<std::uint16_t>(source.to(DType::kBF16));
  const auto e4m3 = values_of<std::uint8_t>(source.to(DType::kF8E4M3));
  const auto f64 = values_of<double>(source.to(DType::kF64));
  for (std::size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(values[i]);
    EXPECT_EQ(f16[i], f32_to_f16(values[i]));
    EXPECT_EQ(bf16[i], f32_to_bf16(values[i]));
    EXPECT_EQ(e4m3[i], f32_to_e4m3(values[i]));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(f64[i]),
              std::bit_cast<std::uint64_t>(static_cast<double>(values[i])))
        << "f64 widening must be exact, NaN included";
  }
  // And back: every narrow value widens exactly.
  const auto back = values_of<float>(source.to(DType::kF16).to(DType::kF32));
  for (std::size_t i = 0; i + 1 < values.size(); ++i) EXPECT_EQ(back[i], round_to_f16(values[i]));
  EXPECT_TRUE(std::isnan(back.back()));
}

TEST(TensorTo, EveryNarrowCodeSurvivesARoundTrip) {
  std::vector<std::uint8_t> e4m3(256);
  for (std::size_t i = 0; i < e4m3.size(); ++i) e4m3[i] = static_cast<std::uint8_t>(i);
  // Every e4m3 value is an f16 value, and every f16 value an f32 value.
  const auto again =
      values_of<std::uint8_t>(tensor_of(DType::kF8E4M3, e4m3).to(DType::kF16).to(DType::kF8E4M3));
  for (std::size_t i = 0; i < e4m3.size(); ++i) {
    if ((i & 0x7F) == 0x7F) continue;  // NaN: stays NaN, checked below
    EXPECT_EQ(again[i], e4m3[i]) << i;
  }
  EXPECT_TRUE(std::isnan(e4m3_to_f32(again[0x7F])));
  std::vector<std::uint16_t> f16(65536);
  for (std::size_t i = 0; i < f16.size(); ++i) f16[i] = static_cast<std::uint16_t>(i);
  const auto f16_again =
      values_of<std::uint16_t>(tensor_of(DType::kF16, f16).to(DType::kF64).to(DType::kF16));
  for (std::size_t i = 0; i < f16.size(); ++i) {
    if (std::isnan(f16_to_f32(f16[i]))) continue;
    ASSERT_EQ(f16_again[i], f16[i]) << i;
  }
}

// f64 sources round once: the inputs sit just past a tie by less than an f32 ulp, so going through
// f32 first would land exactly on the tie and round to even, the wrong way.
TEST(TensorTo, F64RoundsOnceToNarrowFormats) {
  const Tensor source = tensor_of<double>(DType::kF64, {1.0 + 0x1p-11 + 0x1p-40, -(1.0 + 0x1p-8 + 0x1p-40),
                                                        1.0 + 0x1p-4 + 0x1p-40, 3.4028235e38, 1e300});
  const auto f16 = values_of<std::uint16_t>(source.to(DType::kF16));
  const auto bf16 = values_of<std::uint16_t>(source.to(DType::kBF16));
  const auto e4m3 = values_of<std::uint8_t>(source.to(DType::kF8E4M3));
  const auto f32 = values_of<float>(source.to(DType::kF32));
  EXPECT_EQ(f16[0], 0x3C01);
  EXPECT_EQ(bf16[1], 0xBF81);
  EXPECT_EQ(e4m3[2], 0x39);
  EXPECT_EQ(f32[3], std::numeric_limits<float>::max());  // above FLT_MAX, below the overflow tie
  EXPECT_EQ(f32[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16[4], 0x7C00);
  EXPECT_EQ(e4m3[4], 0x7E);
}

TEST(TensorTo, IntegersRoundOnceToFloats) {
  const std::int64_t big = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;  // just past a bf16 tie
  const std::int64_t f32_case =
      (std::int64_t{1} << 60) + (std::int64_t{1} << 36) + 1;  // just past an f32 tie
  const Tensor source = tensor_of<std::int64_t>(
      DType::kI64,
      {big, -big, f32_case, (std::int64_t{1} << 53) + 1, std::numeric_limits<std::int64_t>::min(), 3});
  const auto bf16 = values_of<std::uint16_t>(source.to(DType::kBF16));
  const auto f32 = values_of<float>(source.to(DType::kF32));
  const auto f64 = values_of<double>(source.to(DType::kF64));
  const auto f16 = values_of<std::uint16_t>(source.to(DType::kF16));
  EXPECT_EQ(bf16[0], 0x5D81);
  EXPECT_EQ(bf16[1], 0xDD81);
  EXPECT_EQ(f32[2], 0x1p60f + 0x1p37f);
  EXPECT_EQ(f32[2], static_cast<float>(f32_case));
  EXPECT_EQ(f64[3], 0x1p53);
  EXPECT_EQ(f32[4], -0x1p63f);
  EXPECT_EQ(f16[4], 0xFC00);
  EXPECT_EQ(f16[5], 0x4200);
  const auto small =
      values_of<std::uint8_t>(tensor_of<std::int32_t>(DType::kI32, {-7, 0, 200}).to(DType::kF8E4M3));
  EXPECT_EQ(small, (std::vector<std::uint8_t>{0xCE, 0x00, 0x74}));  // -7 exact; 200 ties 192 and 208
}

TEST(TensorTo, IntegersConvertExactlyOrThrow) {
  const std::int64_t odd = (std::int64_t{1} << 62) + 1;  // not an f64 value: must not pass through one
  EXPECT_EQ(values_of<std::int64_t>(tensor_of<std::int64_t>(DType::kI64, {odd}).to(DType::kI64))[0], odd);
  EXPECT_EQ(values_of<std::int64_t>(tensor_of<std::int32_t>(DType::kI32, {-5, 7}).to(DType::kI64)),
            (std::vector<std::int64_t>{-5, 7}));
  EXPECT_EQ(values_of<std::int32_t>(
                tensor_of<std::int64_t>(DType::kI64, {-2147483648LL, 2147483647LL}).to(DType::kI32)),
            (std::vector<std::int32_t>{-2147483648, 2147483647}));
  const std::string message =
      error_message([] { tensor_of<std::int64_t>(DType::kI64, {3000000000LL}).to(DType::kI32); });
  EXPECT_EQ(message,
            "cannot convert i64 value 3000000000 to i32: expected a value in [-2147483648, 2147483647]");
  EXPECT_THROW(tensor_of<std::int32_t>(DType::kI32, {-1}).to(DType::kU8), Error);
  EXPECT_THROW(tensor_of<std::int32_t>(DType::kI32, {128}).to(DType::kI8), Error);
  EXPECT_EQ(values_of<std::uint8_t>(tensor_of<std::int16_t>(DType::kI16, {255, 0}).to(DType::kU8)),
            (std::vector<std::uint8_t>{255, 0}));
}

TEST(TensorTo, FloatsTruncateToIntegersOrThrow) {
  EXPECT_EQ(values_of<std::int32_t>(
                tensor_of<float>(DType::kF32, {2.7f, -2.7f, -0.5f, -2147483648.0f}).to(DType::kI32)),
            (std::vector<std::int32_t>{2, -2, 0, -2147483647 - 1}));
  EXPECT_EQ(values_of<std::uint8_t>(tensor_of<float>(DType::kF32, {255.9f, -0.9f}).to(DType::kU8)),
            (std::vector<std::uint8_t>{255, 0}));
  EXPECT_EQ(values_of<std::int64_t>(
                tensor_of<double>(DType::kF64, {-0x1p63, 0x1.FFFFFFFFFFFFFp62}).to(DType::kI64)),
            (std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 0x7FFFFFFFFFFFFC00}));
  EXPECT_THROW(tensor_of<float>(DType::kF32, {2147483648.0f}).to(DType::kI32), Error);
  EXPECT_THROW(tensor_of<double>(DType::kF64, {0x1p63}).to(DType::kI64), Error);
  EXPECT_THROW(tensor_of<float>(DType::kF32, {256.0f}).to(DType::kU8), Error);
  EXPECT_THROW(tensor_of<float>(DType::kF32, {std::numeric_limits<float>::infinity()}).to(DType::kI16),
               Error);
  const std::string message = error_message(
      [] { tensor_of<float>(DType::kF32, {std::numeric_limits<float>::quiet_NaN()}).to(DType::kI8); });
  EXPECT_TRUE(contains(message, "cannot convert f32 value nan to i8")) << message;
  const auto from_f16 =
      values_of<std::int8_t>(tensor_of<std::uint16_t>(DType::kF16, {0xC500}).to(DType::kI8));
  EXPECT_EQ(from_f16[0], -5);
}

TEST(TensorTo, BoolIsNonZero) {
  const auto from_float = values_of<std::uint8_t>(
      tensor_of<float>(DType::kF32, {0.0f, -0.0f, 2.5f, 1e-40f, std::numeric_limits<float>::quiet_NaN()})
          .to(DType::kBool));
  EXPECT_EQ(from_float, (std::vector<std::uint8_t>{0, 0, 1, 1, 1}));
  const auto from_int =
      values_of<std::uint8_t>(tensor_of<std::int32_t>(DType::kI32, {0, 5, -1}).to(DType::kBool));
  EXPECT_EQ(from_int, (std::vector<std::uint8_t>{0, 1, 1}));
  const Tensor flags = tensor_of<std::uint8_t>(DType::kBool, {0, 1, 7});  // any non-zero byte is true
  EXPECT_EQ(values_of<float>(flags.to(DType::kF32)), (std::vector<float>{0.0f, 1.0f, 1.0f}));
  EXPECT_EQ(values_of<std::int64_t>(flags.to(DType::kI64)), (std::vector<std::int64_t>{0, 1, 1}));
}

TEST(TensorTo, ResultIsOwnedAndSourceUntouched) {
  const std::vector<float> values = {1.5f, -3.0f};
  const Tensor view = Tensor::view(DType::kF32, {2}, values.data(), nullptr);
  Tensor same = view.to(DType::kF32);
  EXPECT_NE(same.bytes(), view.bytes());
  same.mutable_f32()[0] = 0.0f;
  EXPECT_EQ(values[0], 1.5f);
  Tensor halves = view.to(DType::kF16);
  EXPECT_NO_THROW(halves.mutable_bytes());
  EXPECT_EQ(halves.shape(), view.shape());
  EXPECT_EQ(halves.dtype(), DType::kF16);
}

TEST(RepeatedBatch, CopiesTheItemIntoEveryRow) {
  const Tensor item = Tensor::from_f32({2, 2}, std::vector<float>{1.0f, -2.0f, 3.5f, 0.0f});
  const Tensor batch = repeated_batch(item, 3);
  EXPECT_EQ(batch.shape(), (Shape{3, 2, 2}));
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(batch.f32()[i], item.f32()[i % 4]) << i;
}

}  // namespace
}  // namespace kiln
