// The conversions under test for each narrow format, behind one interface, so that a rule is
// written once and checked for f16, bf16 and e4m3 alike.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/dtype.h"
#include "float_reference.h"

namespace kiln::reference {

struct Codec {
  FormatSpec spec;
  std::uint32_t (*from_f32)(float);
  std::uint32_t (*from_f64)(double);
  float (*to_f32)(std::uint32_t);
};

inline const Codec kF16Codec{
    kF16Spec,
    [](float value) -> std::uint32_t { return f32_to_f16(value); },
    [](double value) -> std::uint32_t { return f64_to_f16(value); },
    [](std::uint32_t bits) { return f16_to_f32(static_cast<std::uint16_t>(bits)); },
};
inline const Codec kBF16Codec{
    kBF16Spec,
    [](float value) -> std::uint32_t { return f32_to_bf16(value); },
    [](double value) -> std::uint32_t { return f64_to_bf16(value); },
    [](std::uint32_t bits) { return bf16_to_f32(static_cast<std::uint16_t>(bits)); },
};
inline const Codec kE4M3Codec{
    kE4M3Spec,
    [](float value) -> std::uint32_t { return f32_to_e4m3(value); },
    [](double value) -> std::uint32_t { return f64_to_e4m3(value); },
    [](std::uint32_t bits) { return e4m3_to_f32(static_cast<std::uint8_t>(bits)); },
};

inline std::string codec_name(const Codec& codec) { return std::string(codec.spec.name); }

// Lets GoogleTest name the format instead of dumping the struct's bytes.
inline void PrintTo(const Codec& codec, std::ostream* out) { *out << codec.spec.name; }

}  // namespace kiln::reference
