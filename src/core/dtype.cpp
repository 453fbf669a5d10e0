#include "core/dtype.h"

#include <array>
#include <bit>
#include <algorithm>
#include <cmath>
#include <limits>

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

// E4M3: bias 7, exponents 1..15 normal (15 with mantissa 7 is NaN), max 448 = 1.75 * 2^8,
// subnormals m * 2^-9.
std::uint8_t f32_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7F;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (magnitude >= kE4M3Max) return static_cast<std::uint8_t>(sign | 0x7E);  // saturate (inf too)
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  // Unit in the last place of the result: 2^(e-1-3) for normals (e-1 >= -6), 2^-9 for subnormals.
  const int ulp_exp = std::max(exponent - 1, -6) - 3;
  const float units = std::ldexp(magnitude, -ulp_exp);  // exact: a power-of-two scaling
  const float rounded = std::nearbyint(units);           // default rounding mode: nearest-even
  const auto code = static_cast<std::uint32_t>(rounded);
  // code counts units of 2^ulp_exp; for normals it is in [8, 16] (16 carries into the next binade).
  if (ulp_exp == -9) {
    if (code < 8) return static_cast<std::uint8_t>(sign | code);  // subnormal or zero
    return static_cast<std::uint8_t>(sign | 0x08);                // rounded up to 2^-6
  }
  const int biased = ulp_exp + 3 + 7;  // exponent field for a code in [8, 16)
  if (code == 16) {
    return static_cast<std::uint8_t>(sign | ((biased + 1) << 3));
  }
  return static_cast<std::uint8_t>(sign | (biased << 3) | (code - 8));
}

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

}  // namespace kiln
