// Exhaustive checks of the narrow float formats over their bit patterns: decoding, round trips,
// ties at every midpoint, and the special values. The large sweeps over f32/f64 inputs live in
// dtype_sweep_test.cpp.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "codec.h"
#include "core/error.h"
#include "float_reference.h"

namespace kiln {
namespace {

using reference::Codec;
using reference::FailureLog;
using reference::hex;
using reference::NearestReference;
using reference::reference_value;
using reference::show;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(DTypeTable, EveryEnumeratorHasItsOwnEntry) {
  struct Expected {
    DType dtype;
    std::size_t size;
    bool is_float;
    std::string_view safetensors;
    std::string_view name;
  };
  const Expected expected[] = {
      {DType::kF64, 8, true, "F64", "f64"},         {DType::kF32, 4, true, "F32", "f32"},
      {DType::kF16, 2, true, "F16", "f16"},         {DType::kBF16, 2, true, "BF16", "bf16"},
      {DType::kF8E4M3, 1, true, "F8_E4M3", "e4m3"}, {DType::kI64, 8, false, "I64", "i64"},
      {DType::kI32, 4, false, "I32", "i32"},        {DType::kI16, 2, false, "I16", "i16"},
      {DType::kI8, 1, false, "I8", "i8"},           {DType::kU8, 1, false, "U8", "u8"},
      {DType::kBool, 1, false, "BOOL", "bool"},
  };
  // The list above covers the enumerators in order, so a new one without a table entry shows up here.
  ASSERT_EQ(static_cast<int>(DType::kBool) + 1, static_cast<int>(std::size(expected)));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    const auto& entry = expected[i];
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(static_cast<std::size_t>(entry.dtype), i);
    EXPECT_EQ(dtype_size(entry.dtype), entry.size);
    EXPECT_EQ(dtype_is_float(entry.dtype), entry.is_float);
    EXPECT_EQ(safetensors_name(entry.dtype), entry.safetensors);
    EXPECT_EQ(dtype_name(entry.dtype), entry.name);
    EXPECT_EQ(dtype_from_safetensors_name(entry.safetensors), entry.dtype);
  }
  EXPECT_EQ(dtype_from_safetensors_name("F8_E5M2"), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors_name("f32"), std::nullopt);  // names are case-sensitive
  EXPECT_EQ(dtype_from_safetensors_name(""), std::nullopt);
}

class FormatTest : public ::testing::TestWithParam<Codec> {
 protected:
  const Codec& codec() const { return GetParam(); }
  const reference::FormatSpec& spec() const { return GetParam().spec; }
};

// The reference itself, pinned to the published constants of each format.
TEST_P(FormatTest, ReferenceMatchesPublishedConstants) {
  const NearestReference reference(spec());
  const auto& values = reference.values();
  struct Constants {
    double max;
    double min_normal;
    double min_subnormal;
    std::uint32_t max_code;
    int nan_codes;
  };
  const Constants constants = spec().name == "f16" ? Constants{65504.0, 0x1p-14, 0x1p-24, 0x7BFF, 2 * 1023}
                              : spec().name == "bf16"
                                  ? Constants{0x1.FEp127, 0x1p-126, 0x1p-133, 0x7F7F, 2 * 127}
                                  : Constants{448.0, 0x1p-6, 0x1p-9, 0x7E, 2};
  EXPECT_EQ(reference.max_finite_code(), constants.max_code);
  EXPECT_EQ(values.back(), constants.max);
  EXPECT_EQ(values[1], constants.min_subnormal);
  EXPECT_EQ(values[std::size_t{1} << spec().mantissa_bits], constants.min_normal);
  EXPECT_EQ(values[0], 0.0);
  for (std::size_t i = 1; i < values.size(); ++i) ASSERT_LT(values[i - 1], values[i]) << "code " << i;
  int nan_codes = 0;
  for (std::uint32_t code = 0; code < reference::code_count(spec()); ++code) {
    const double value = reference_value(spec(), code);
    if (std::isnan(value)) ++nan_codes;
    // Negative codes mirror the positive ones.
    if ((code & reference::sign_bit(spec())) == 0 && !std::isnan(value)) {
      const double negative = reference_value(spec(), code | reference::sign_bit(spec()));
      ASSERT_EQ(negative, -value);
      ASSERT_TRUE(std::signbit(negative));
    }
  }
  EXPECT_EQ(nan_codes, constants.nan_codes);
  if (spec().ieee_specials) {
    EXPECT_EQ(reference_value(spec(), constants.max_code + 1), kInf);
  } else {
    EXPECT_TRUE(std::isnan(reference_value(spec(), 0x7F)));
    EXPECT_TRUE(std::isnan(reference_value(spec(), 0xFF)));
  }
}

TEST_P(FormatTest, DecodesEveryPatternByTheFormula) {
  FailureLog failures;
  for (std::uint32_t code = 0; code < reference::code_count(spec()); ++code) {
    const double expected = reference_value(spec(), code);
    const float got = codec().to_f32(code);
    const bool same = std::isnan(expected) ? std::isnan(got)
                                           : static_cast<double>(got) == expected &&
                                                 std::signbit(got) == std::signbit(expected);
    if (!same) failures.add(hex(code) + " decodes to " + show(got) + ", expected " + show(expected));
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

TEST_P(FormatTest, RoundTripsEveryValue) {
  FailureLog failures;
  for (std::uint32_t code = 0; code < reference::code_count(spec()); ++code) {
    const float value = codec().to_f32(code);
    if (std::isnan(value)) continue;
    if (const auto back = codec().from_f32(value); back != code) {
      failures.add("f32 " + show(value) + " from " + hex(code) + " encodes to " + hex(back));
    }
    if (const auto back = codec().from_f64(value); back != code) {
      failures.add("f64 " + show(value) + " from " + hex(code) + " encodes to " + hex(back));
    }
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

// For each pair of neighbouring values: the exact midpoint goes to the even code, and one ulp of the
// source type to either side goes to the nearer value. The pair past the largest value is the
// overflow edge: infinity for IEEE formats (it is "even"), the largest value for a saturating one.
TEST_P(FormatTest, MidpointsTieToEvenAndNeighboursRoundToNearer) {
  const NearestReference reference(spec());
  const auto& values = reference.values();
  const std::uint32_t top = reference.max_finite_code();
  FailureLog failures;
  const auto expect = [&](const char* source, double input, std::uint32_t got, std::uint32_t want) {
    if (got != want)
      failures.add(std::string(source) + " " + show(input) + " -> " + hex(got) + ", expected " + hex(want));
  };
  for (std::uint32_t low = 0; low <= top; ++low) {
    const double low_value = values[low];
    const double high_value = low < top ? values[low + 1] : low_value + (low_value - values[low - 1]);
    const std::uint32_t high = low + 1;
    const std::uint32_t above = low < top || !spec().saturates ? high : top;  // what "round up" means here
    const std::uint32_t even = (low & 1u) == 0 ? low : above;
    const double middle = (low_value + high_value) / 2;
    for (const bool negative : {false, true}) {
      const std::uint32_t sign = negative ? reference::sign_bit(spec()) : 0u;
      const double mid = negative ? -middle : middle;
      const double toward_low = negative ? kInf : -kInf;
      const auto mid_f32 = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(mid_f32), mid) << "midpoint not exact in f32";
      const auto f = static_cast<float>(toward_low);
      expect("f32", mid, codec().from_f32(mid_f32), sign | even);
      expect("f32", std::nextafter(mid_f32, f), codec().from_f32(std::nextafter(mid_f32, f)), sign | low);
      expect("f32", std::nextafter(mid_f32, -f), codec().from_f32(std::nextafter(mid_f32, -f)), sign | above);
      expect("f64", mid, codec().from_f64(mid), sign | even);
      // One f64 ulp off the midpoint: an f64 -> f32 -> narrow path would see an exact tie here.
      expect("f64", std::nextafter(mid, toward_low), codec().from_f64(std::nextafter(mid, toward_low)),
             sign | low);
      expect("f64", std::nextafter(mid, -toward_low), codec().from_f64(std::nextafter(mid, -toward_low)),
             sign | above);
    }
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

TEST_P(FormatTest, SpecialValues) {
  const NearestReference reference(spec());
  const std::uint32_t top = reference.max_finite_code();
  const std::uint32_t sign = reference::sign_bit(spec());
  const std::uint32_t overflow = spec().saturates ? top : top + 1;  // top + 1 is infinity for IEEE formats

  EXPECT_EQ(codec().from_f32(0.0f), 0u);
  EXPECT_EQ(codec().from_f32(-0.0f), sign);
  EXPECT_EQ(codec().from_f64(0.0), 0u);
  EXPECT_EQ(codec().from_f64(-0.0), sign);
  EXPECT_FALSE(std::signbit(codec().to_f32(0)));
  EXPECT_TRUE(std::signbit(codec().to_f32(sign)));

  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(codec().from_f32(inf), overflow);
  EXPECT_EQ(codec().from_f32(-inf), sign | overflow);
  EXPECT_EQ(codec().from_f64(kInf), overflow);
  EXPECT_EQ(codec().from_f64(-kInf), sign | overflow);
  // From the midpoint past the largest value on, everything overflows (or saturates).
  const auto& values = reference.values();
  const double edge = values[top] + (values[top] - values[top - 1]) / 2;
  const auto edge_f32 = static_cast<float>(edge);
  for (const float big : {edge_f32, std::nextafter(edge_f32, inf), std::numeric_limits<float>::max()}) {
    EXPECT_EQ(codec().from_f32(big), overflow) << big;
    EXPECT_EQ(codec().from_f32(-big), sign | overflow) << big;
  }
  for (const double big : {edge, std::nextafter(edge, kInf), std::numeric_limits<double>::max(), 1e300}) {
    EXPECT_EQ(codec().from_f64(big), overflow) << big;
    EXPECT_EQ(codec().from_f64(-big), sign | overflow) << big;
  }

  // Every kind of NaN, quiet or signalling, either sign, any payload, stays NaN.
  for (const std::uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu,
                                   0x7F802000u, 0x7FA00000u, 0xFFFFFFFFu}) {
    const auto nan = std::bit_cast<float>(bits);
    EXPECT_TRUE(std::isnan(codec().to_f32(codec().from_f32(nan)))) << hex(bits);
  }
  for (const std::uint64_t bits : {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000000000001ull,
                                   0x7FF0000000000400ull, 0xFFFFFFFFFFFFFFFFull}) {
    const auto nan = std::bit_cast<double>(bits);
    EXPECT_TRUE(std::isnan(codec().to_f32(codec().from_f64(nan)))) << hex(bits);
  }
}

// f32 subnormals are below 2^-126: they vanish in f16 and e4m3 but land on bf16 subnormals.
TEST_P(FormatTest, EveryF32SubnormalRoundsToNearest) {
  const NearestReference reference(spec());
  FailureLog failures;
  for (std::uint32_t mantissa = 1; mantissa < (1u << 23); ++mantissa) {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
      const auto value = std::bit_cast<float>(sign | mantissa);
      const std::uint32_t want = reference.encode(value);
      if (const auto got = codec().from_f32(value); got != want) {
        failures.add(show(value) + " -> " + hex(got) + ", expected " + hex(want));
      }
    }
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

TEST_P(FormatTest, TinyF64ValuesRoundToSignedZero) {
  const std::uint32_t sign = reference::sign_bit(spec());
  const NearestReference reference(spec());
  const double half_smallest = reference.values()[1] / 2;  // ties to zero, the even code
  for (const double tiny :
       {std::numeric_limits<double>::denorm_min(), 0x1p-1050, std::numeric_limits<double>::min(),
        static_cast<double>(std::numeric_limits<float>::denorm_min()), half_smallest}) {
    EXPECT_EQ(codec().from_f64(tiny), 0u) << tiny;
    EXPECT_EQ(codec().from_f64(-tiny), sign) << tiny;
  }
  EXPECT_EQ(codec().from_f64(std::nextafter(half_smallest, 1.0)), 1u);
  EXPECT_EQ(codec().from_f64(-std::nextafter(half_smallest, 1.0)), sign | 1u);
}

INSTANTIATE_TEST_SUITE_P(Formats, FormatTest,
                         ::testing::Values(reference::kF16Codec, reference::kBF16Codec,
                                           reference::kE4M3Codec),
                         [](const ::testing::TestParamInfo<Codec>& param_info) {
                           return reference::codec_name(param_info.param);
                         });

// Hand-picked values, worked out on paper, so that a mistake shared by the code and the reference
// would still show.
TEST(DTypeKnownValues, F16) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie above the largest value goes to infinity
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);    // tie between 0 and the smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002);  // tie between 1 and 2 units: even
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 0x3p-11f), 0x3C02);
  EXPECT_EQ(f16_to_f32(0x3555), 0x1.554p-2f);
  EXPECT_EQ(f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);  // above the tie by less than an f32 ulp
}

TEST(DTypeKnownValues, BF16) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x3p-8f), 0x3F82);
  EXPECT_EQ(f32_to_bf16(-3.0f), 0xC040);
  EXPECT_EQ(f32_to_bf16(0x1.FFp127f), 0x7F80);  // the tie above the largest value goes to infinity
  EXPECT_EQ(bf16_to_f32(0x0001), 0x1p-133f);
  EXPECT_EQ(f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
}

TEST(DTypeKnownValues, E4M3) {
  EXPECT_EQ(f32_to_e4m3(0.0f), 0x00);
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(f32_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(f32_to_e4m3(-1.0f), 0xB8);
  EXPECT_EQ(f32_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7E);  // would round to 480 if that existed; 0x7F is NaN
  EXPECT_EQ(f32_to_e4m3(1e6f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(f32_to_e4m3(0x1p-9f), 0x01);
  EXPECT_EQ(f32_to_e4m3(0x1p-10f), 0x00);
  EXPECT_EQ(f32_to_e4m3(0x1.8p-9f), 0x02);
  EXPECT_EQ(f32_to_e4m3(0x1.Ep-7f), 0x08);  // 7.5 subnormal units: ties up to the smallest normal
  EXPECT_EQ(f32_to_e4m3(0x1.Fp-1f), 0x38);  // 0.96875 ties between 0.9375 (odd) and 1.0 (even)
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xFF)));
  EXPECT_EQ(round_to_e4m3(300.0f), 288.0f);
  EXPECT_EQ(round_to_f16(0.1f), 0x1.998p-4f);
}

TEST(DTypeRoundExact, RejectsNonFloatTargets) {
  EXPECT_THROW(round_exact_to_bits(DType::kI32, false, 1, 0), Error);
  EXPECT_THROW(round_exact_to_bits(DType::kF64, false, 1, 0), Error);
  EXPECT_EQ(round_exact_to_bits(DType::kF16, true, 0, 5), 0x8000u);
}

}  // namespace
}  // namespace kiln
