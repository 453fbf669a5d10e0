// Element types and exact conversions between them.
//
// Every narrowing conversion rounds to nearest, ties to even. fp16 and bf16 overflow to infinity as
// IEEE does; E4M3 (the OCP FP8 format used by Hopper: 4 exponent bits, bias 7, 3 mantissa bits, no
// infinities, 0x7F/0xFF are NaN) saturates to +-448, infinities included, because that is what a
// quantizer must do. NaN stays NaN (keeping its sign) in every format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class DType : std::uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3,
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kBool,
};

std::size_t dtype_size(DType dtype);
bool dtype_is_float(DType dtype);

// The names safetensors uses: "F32", "F16", "BF16", "F8_E4M3", "I64", "BOOL", ...
std::string_view safetensors_name(DType dtype);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);

// Short lower-case names for printing: "f32", "f16", "bf16", "e4m3", "i64", ...
std::string_view dtype_name(DType dtype);

std::uint16_t f32_to_f16(float value);
float f16_to_f32(std::uint16_t bits);
std::uint16_t f32_to_bf16(float value);
float bf16_to_f32(std::uint16_t bits);
std::uint8_t f32_to_e4m3(float value);
float e4m3_to_f32(std::uint8_t bits);

// From f64 in one rounding step: going through f32 would round twice and can miss a tie.
std::uint16_t f64_to_f16(double value);
std::uint16_t f64_to_bf16(double value);
std::uint8_t f64_to_e4m3(double value);
float f64_to_f32(double value);  // as static_cast, but also defined (inf) beyond f32's range

// The shared rounding step: the exact value (negative ? -1 : 1) * magnitude * 2^exponent rounded once
// to `target` (kF32, kF16, kBF16 or kF8E4M3; others throw) under the rules above, as its bit pattern.
// Integer sources use it directly so that, say, a large i64 reaches bf16 without an f64 detour.
std::uint32_t round_exact_to_bits(DType target, bool negative, std::uint64_t magnitude, int exponent);

inline constexpr float kE4M3Max = 448.0f;

// Rounds to the nearest E4M3 value (saturating), returned as float: the simulation primitive.
inline float round_to_e4m3(float value) { return e4m3_to_f32(f32_to_e4m3(value)); }
inline float round_to_f16(float value) { return f16_to_f32(f32_to_f16(value)); }
inline float round_to_bf16(float value) { return bf16_to_f32(f32_to_bf16(value)); }

// FP8 fake quantization with a scale, in f32 as PyTorch computes it: divide, round to E4M3 (saturating),
// multiply back. Every FP8 simulation in kiln goes through this one function.
inline float fake_quantize_e4m3(float value, float scale) { return round_to_e4m3(value / scale) * scale; }

// Symmetric int8: a value x with scale s is stored as the code x * (1 / s) rounded to nearest, ties to even,
// and saturated to [-128, 127]; it reads back as code * s. The reciprocal is taken once in f32 and
// multiplied, as PyTorch's fake_quantize_per_tensor_affine and oneDNN's scaled conversions compute it, so
// codes agree with both bit for bit. Scales are amax / 127 (weights never reach -128); activations beyond
// the calibrated range saturate where an s8 register does. int8 has no NaN: quantize_to_int8 makes NaN 0,
// while fake_quantize_int8, the simulation, keeps NaN so that a NaN still shows in the output.
inline constexpr float kInt8Max = 127.0f;
std::int8_t quantize_to_int8(float value, float inverse_scale);
float fake_quantize_int8(float value, float scale);

}  // namespace kiln
