#include "core/dtype.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace kiln {

namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  bool is_float;
  std::string_view safetensors;
  std::string_view short_name;
};

constexpr std::array<DTypeInfo, 11> kDTypes = {{
    {DType::kF64, 8, true, "F64", "f64"},
    {DType::kF32, 4, true, "F32", "f32"},
    {DType::kF16, 2, true, "F16", "f16"},
    {DType::kBF16, 2, true, "BF16", "bf16"},
    {DType::kF8E4M3, 1, true, "F8_E4M3", "e4m3"},
    {DType::kI64, 8, false, "I64", "i64"},
    {DType::kI32, 4, false, "I32", "i32"},
    {DType::kI16, 2, false, "I16", "i16"},
    {DType::kI8, 1, false, "I8", "i8"},
    {DType::kU8, 1, false, "U8", "u8"},
    {DType::kBool, 1, false, "BOOL", "bool"},
}};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDTypes[1];  // unreachable: every enumerator is in the table (a test checks)
}

}  // namespace

std::size_t dtype_size(DType dtype) { return info(dtype).size; }
bool dtype_is_float(DType dtype) { return info(dtype).is_float; }
std::string_view safetensors_name(DType dtype) { return info(dtype).safetensors; }
std::string_view dtype_name(DType dtype) { return info(dtype).short_name; }

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.safetensors == name) return entry.dtype;
  }
  return std::nullopt;
}

// f32 -> f16: round the 23-bit mantissa to 10 bits (or fewer for subnormal results), nearest-even.
std::uint16_t f32_to_f16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  std::uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent == 0xFF) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (mantissa != 0 ? 0x200u | (mantissa >> 13) : 0u));
  }
  const int unbiased = static_cast<int>(exponent) - 127;
  if (unbiased > 15) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow to infinity
  if (exponent == 0) return sign;  // f32 subnormals are far below f16's smallest subnormal
  mantissa |= 0x800000u;           // implicit leading one: value = mantissa * 2^(unbiased - 23)
  // Bits to drop so that the result counts units of 2^-24 (subnormal) or of 2^(unbiased-10) (normal).
  const int shift = unbiased >= -14 ? 13 : 13 + (-14 - unbiased);
  if (shift > 24) return sign;  // below half the smallest subnormal
  const std::uint32_t kept = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  if (unbiased >= -14) {
    // Normal: rounded holds 1.mantissa in 11 bits; a carry into bit 11 bumps the exponent.
    const auto biased = static_cast<std::uint32_t>(unbiased + 15);
    const std::uint32_t result = (biased << 10) + (rounded - 0x400u);
    return static_cast<std::uint16_t>(sign | result);  // result 0x7C00 is a correct overflow to inf
  }
  return static_cast<std::uint16_t>(sign | rounded);  // subnormal (a carry makes it the smallest normal)
}

float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

std::uint16_t f32_to_bf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

float bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

namespace {

// A binary float format as the shared rounding step sees it (bit patterns without the sign).
struct BinaryFormat {
  int mantissa_bits;
  int bias;
  std::uint32_t max_finite;  // the largest finite magnitude
  std::uint32_t overflow;    // what larger magnitudes become: infinity, or max_finite where it saturates
  std::uint32_t quiet_nan;
  std::uint32_t sign_bit;
};

constexpr BinaryFormat kF32Format{23, 127, 0x7F7FFFFFu, 0x7F800000u, 0x7FC00000u, 0x80000000u};
constexpr BinaryFormat kF16Format{10, 15, 0x7BFFu, 0x7C00u, 0x7E00u, 0x8000u};
constexpr BinaryFormat kBF16Format{7, 127, 0x7F7Fu, 0x7F80u, 0x7FC0u, 0x8000u};
// E4M3 uses exponent field 15 for normals too (only 0x7F is NaN), so it reaches 2^8 * 1.75 = 448.
constexpr BinaryFormat kE4M3Format{3, 7, 0x7Eu, 0x7Eu, 0x7Fu, 0x80u};

const BinaryFormat& format_of(DType target) {
  switch (target) {
    case DType::kF32:
      return kF32Format;
    case DType::kF16:
      return kF16Format;
    case DType::kBF16:
      return kBF16Format;
    case DType::kF8E4M3:
      return kE4M3Format;
    default:
      break;
  }
  fail("cannot round to ", dtype_name(target), ": expected f32, f16, bf16 or e4m3");
}

// magnitude * 2^exponent (magnitude > 0, exact) rounded to nearest, ties to even: the bits of the
// result's magnitude.
std::uint32_t round_magnitude(const BinaryFormat& format, std::uint64_t magnitude, int exponent) {
  const int leading = exponent + static_cast<int>(std::bit_width(magnitude)) - 1;  // 2^leading <= value
  // Every format's largest value is below 2^(bias + 2); bailing out early keeps the shifts small.
  if (leading > format.bias + 2) return format.overflow;
  const int min_normal = 1 - format.bias;
  const int scale = std::max(leading, min_normal);  // subnormals share the smallest normal's spacing
  const int shift = scale - format.mantissa_bits - exponent;  // bits of magnitude below the last place
  std::uint64_t units = 0;  // the result in units of its last place; 2^mantissa_bits = implicit one
  if (shift <= 0) {
    units = magnitude << -shift;  // exact: the value already fits
  } else if (shift <= 64) {
    const std::uint64_t kept = shift == 64 ? 0 : magnitude >> shift;
    const std::uint64_t rest = shift == 64 ? magnitude : magnitude & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    units = kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
  }  // else: below half the smallest subnormal, rounds to zero
  // Adding units (not units - 2^mantissa_bits) to exponent field - 1 lets a rounding carry move to
  // the next binade, and a subnormal's field is 0 because scale + bias - 1 == 0 there.
  const std::uint64_t code =
      (static_cast<std::uint64_t>(scale + format.bias - 1) << format.mantissa_bits) + units;
  return code > format.max_finite ? format.overflow : static_cast<std::uint32_t>(code);
}

std::uint32_t round_f64(const BinaryFormat& format, double value) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const std::uint32_t sign = (bits >> 63) != 0 ? format.sign_bit : 0u;
  const auto field = static_cast<int>((bits >> 52) & 0x7FFu);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (field == 0x7FF) return sign | (fraction != 0 ? format.quiet_nan : format.overflow);
  if (field == 0) return fraction == 0 ? sign : sign | round_magnitude(format, fraction, -1074);
  return sign | round_magnitude(format, fraction | (std::uint64_t{1} << 52), field - 1075);
}

}  // namespace

std::uint32_t round_exact_to_bits(DType target, bool negative, std::uint64_t magnitude, int exponent) {
  const BinaryFormat& format = format_of(target);
  const std::uint32_t sign = negative ? format.sign_bit : 0u;
  return magnitude == 0 ? sign : sign | round_magnitude(format, magnitude, exponent);
}

// Widening to f64 is exact, so the f64 path rounds E4M3 once as well.
std::uint8_t f32_to_e4m3(float value) { return f64_to_e4m3(value); }

float f64_to_f32(double value) { return std::bit_cast<float>(round_f64(kF32Format, value)); }
std::uint16_t f64_to_f16(double value) { return static_cast<std::uint16_t>(round_f64(kF16Format, value)); }
std::uint16_t f64_to_bf16(double value) { return static_cast<std::uint16_t>(round_f64(kBF16Format, value)); }
std::uint8_t f64_to_e4m3(double value) { return static_cast<std::uint8_t>(round_f64(kE4M3Format, value)); }

float e4m3_to_f32(std::uint8_t bits) {
  const bool negative = (bits & 0x80) != 0;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  float magnitude = 0.0f;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 7 - 3);
  }
  return negative ? -magnitude : magnitude;
}

std::int8_t quantize_to_int8(float value, float inverse_scale) {
  const float scaled = value * inverse_scale;
  if (std::isnan(scaled)) return 0;
  // nearbyint rounds ties to even in the default rounding mode, which kiln never changes.
  return static_cast<std::int8_t>(std::clamp(std::nearbyint(scaled), -128.0f, 127.0f));
}

float fake_quantize_int8(float value, float scale) {
  if (std::isnan(value)) return value;
  return static_cast<float>(quantize_to_int8(value, 1.0f / scale)) * scale;
}

}  // namespace kiln
