// Large sweeps of f32 and f64 inputs through the narrowing conversions, each against a reference
// that shares no code with them: the compiler's _Float16 (hardware F16C where the CPU has it), a
// brute-force search over all 256 E4M3 codes, a nearest-value search over the bf16 and f16 tables,
// and the hardware's f64 -> f32 conversion.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "codec.h"
#include "core/dtype.h"
#include "float_reference.h"

namespace kiln {
namespace {

using reference::FailureLog;
using reference::hex;
using reference::NearestReference;
using reference::show;

constexpr std::uint64_t kSeed = 0x6B696C6E;  // fixed, so a failure reproduces

// A float with a random sign and mantissa and an exponent in [min_exponent, max_exponent]. ldexp
// may round the smallest ones to subnormals; they are just more inputs.
float random_float(std::mt19937_64& rng, int min_exponent, int max_exponent) {
  const std::uint64_t r = rng();
  const int exponent =
      min_exponent + static_cast<int>(r % static_cast<std::uint64_t>(max_exponent - min_exponent + 1));
  const auto mantissa = static_cast<float>((r >> 32) & 0x7FFFFFu);
  const float value = std::ldexp(1.0f + mantissa * 0x1p-23f, exponent);
  return (r >> 63) != 0 ? -value : value;
}

double random_double(std::mt19937_64& rng, int min_exponent, int max_exponent) {
  const std::uint64_t r = rng();
  const std::uint64_t s = rng();
  const int exponent =
      min_exponent + static_cast<int>(r % static_cast<std::uint64_t>(max_exponent - min_exponent + 1));
  const auto mantissa = static_cast<double>(s & ((std::uint64_t{1} << 52) - 1));
  const double value = std::ldexp(1.0 + mantissa * 0x1p-52, exponent);
  return (s >> 63) != 0 ? -value : value;
}

float random_non_nan_float(std::mt19937_64& rng) {
  for (;;) {
    const auto value = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (!std::isnan(value)) return value;
  }
}

// Inputs near every rounding decision of a format: each value and each midpoint between neighbours
// (including the one past the largest value), `steps` ulps of T to either side, both signs.
template <typename T>
std::vector<T> boundary_inputs(const NearestReference& reference, int steps) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const auto& values = reference.values();
  std::vector<double> anchors;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double next = i + 1 < values.size() ? values[i + 1] : values[i] + (values[i] - values[i - 1]);
    anchors.push_back(values[i]);
    anchors.push_back(values[i] / 2 + next / 2);
  }
  std::vector<T> inputs;
  for (const double anchor : anchors) {
    const auto bits = std::bit_cast<Bits>(static_cast<T>(anchor));
    for (int step = -steps; step <= steps; ++step) {
      if (bits == 0 && step < 0) continue;  // below +0 is the negative side, covered by the sign
      const auto value =
          std::bit_cast<T>(static_cast<Bits>(bits + static_cast<Bits>(static_cast<std::int64_t>(step))));
      if (std::isnan(value)) continue;
      inputs.push_back(value);
      inputs.push_back(-value);
    }
  }
  return inputs;
}

// ---- f16 against the compiler's _Float16 ----

#if defined(__FLT16_MAX__)
#if defined(__x86_64__)
__attribute__((target("f16c"))) std::uint16_t compiler_f16_f16c(float value) {
  return std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
}
#endif
std::uint16_t compiler_f16(float value) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(value)); }
// Through libgcc's soft-float routine, which rounds f64 -> f16 in one step.
std::uint16_t compiler_f16(double value) {
  return std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
}

bool f16_matches(std::uint16_t got, std::uint16_t want) {
  const bool want_nan = (want & 0x7C00u) == 0x7C00u && (want & 0x3FFu) != 0;
  if (!want_nan) return got == want;
  return (got & 0x7C00u) == 0x7C00u && (got & 0x3FFu) != 0 && (got & 0x8000u) == (want & 0x8000u);
}

class F16Sweep {
 public:
  F16Sweep() {
#if defined(__x86_64__)
    hardware_ = __builtin_cpu_supports("f16c") != 0;
#endif
  }
  bool hardware() const { return hardware_; }

  void check(std::uint32_t bits) {
    const auto value = std::bit_cast<float>(bits);
    std::uint16_t want = 0;
#if defined(__x86_64__)
    want = hardware_ ? compiler_f16_f16c(value) : compiler_f16(value);
#else
    want = compiler_f16(value);
#endif
    if (const auto got = f32_to_f16(value); !f16_matches(got, want)) {
      failures_.add(hex(bits) + " " + show(value) + " -> " + hex(got) + ", compiler gives " + hex(want));
    }
  }
  const FailureLog& failures() const { return failures_; }

 private:
  bool hardware_ = false;
  FailureLog failures_;
};

TEST(DTypeSweep, F16FromF32MatchesCompilerFloat16) {
  F16Sweep sweep;
  // Parts 2 and 3 together reach every class of f32 input that f32 -> f16 can tell apart, so they
  // stand for all 2^32 patterns; part 1 samples the whole space as well, as a check on that argument.
  // Software _Float16 is ~50x slower than F16C, so everything thins out without it.
  const std::uint64_t stride = sweep.hardware() ? 17 : 4099;
  // 1. A dense stride over all 2^32 patterns (odd, so every low-bit residue occurs).
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += stride) {
    sweep.check(static_cast<std::uint32_t>(bits));
  }
  // 2. Where the result is normal, infinite or NaN, of the 13 dropped bits only the round bit (the
  // top one) and whether any other is set matter; these low patterns cover every combination for
  // every sign, exponent and kept mantissa. (Inputs below 2^-26 all give zero.)
  for (std::uint32_t upper = 0; upper < (1u << 19); ++upper) {
    for (const std::uint32_t low :
         {0x0000u, 0x0001u, 0x0002u, 0x0FFEu, 0x0FFFu, 0x1000u, 0x1001u, 0x1002u, 0x1FFEu, 0x1FFFu}) {
      sweep.check(upper << 13 | low);
    }
  }
  // 3. Every pattern, both signs, in the binades where results are subnormal or underflow (2^-26 up to
  // the smallest normal 2^-14) and at the top (2^15 up to overflow), where the shifts change.
  const std::uint32_t step = sweep.hardware() ? 1 : 61;
  for (const std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t exponent = 101; exponent <= 143; ++exponent) {
      if (exponent > 113 && exponent < 142) continue;
      for (std::uint32_t mantissa = 0; mantissa < (1u << 23); mantissa += step) {
        sweep.check(sign | exponent << 23 | mantissa);
      }
    }
  }
  EXPECT_EQ(sweep.failures().count(), 0u) << sweep.failures().summary();
}

TEST(DTypeSweep, F16FromF64MatchesCompilerAndReference) {
  const NearestReference reference(reference::kF16Spec);
  std::mt19937_64 rng(kSeed);
  std::vector<double> inputs = boundary_inputs<double>(reference, 3);
  for (int i = 0; i < 400000; ++i) inputs.push_back(random_double(rng, -27, 17));
  // f32 inputs widened must agree with the f32 path too.
  FailureLog failures;
  for (const double value : inputs) {
    const std::uint16_t got = f64_to_f16(value);
    const std::uint16_t want = compiler_f16(value);
    if (!f16_matches(got, want))
      failures.add(show(value) + " -> " + hex(got) + ", compiler gives " + hex(want));
    if (const auto ref = reference.encode(value); got != ref) {
      failures.add(show(value) + " -> " + hex(got) + ", reference gives " + hex(ref));
    }
  }
  for (int i = 0; i < 400000; ++i) {
    const float value = random_float(rng, -27, 17);
    if (f64_to_f16(value) != f32_to_f16(value)) failures.add("f32 and f64 paths differ at " + show(value));
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}
#else
TEST(DTypeSweep, F16FromF32MatchesCompilerFloat16) { GTEST_SKIP() << "this compiler has no _Float16"; }
#endif

// ---- e4m3 against a brute-force search over all 256 codes ----

TEST(DTypeSweep, E4M3MatchesBruteForce) {
  const NearestReference table(reference::kE4M3Spec);
  const reference::BruteForceNearest brute_force(reference::kE4M3Spec);
  std::mt19937_64 rng(kSeed + 1);
  std::vector<float> inputs = boundary_inputs<float>(table, 40);
  for (int i = 0; i < 1000000; ++i) inputs.push_back(random_float(rng, -14, 10));  // zeros to saturation
  for (int i = 0; i < 250000; ++i) inputs.push_back(random_non_nan_float(rng));
  std::vector<double> wide_inputs = boundary_inputs<double>(table, 40);
  for (int i = 0; i < 250000; ++i) wide_inputs.push_back(random_double(rng, -14, 10));
  FailureLog failures;
  for (const float value : inputs) {
    const std::uint32_t want = brute_force.encode(value);
    // The two references are built differently; they must agree before either is trusted.
    if (const auto other = table.encode(value); other != want) {
      failures.add("references differ at " + show(value) + ": " + hex(other) + " vs " + hex(want));
    }
    if (const std::uint8_t got = f32_to_e4m3(value); got != want) {
      failures.add("f32 " + show(value) + " -> " + hex(got) + ", brute force gives " + hex(want));
    }
  }
  for (const double value : wide_inputs) {
    const std::uint32_t want = brute_force.encode(value);
    if (const std::uint8_t got = f64_to_e4m3(value); got != want) {
      failures.add("f64 " + show(value) + " -> " + hex(got) + ", brute force gives " + hex(want));
    }
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

// ---- bf16 against the nearest-value search ----

TEST(DTypeSweep, BF16MatchesReference) {
  const NearestReference reference(reference::kBF16Spec);
  FailureLog failures;
  const auto check = [&](const char* source, double value, std::uint32_t got) {
    if (const auto want = reference.encode(value); got != want) {
      failures.add(std::string(source) + " " + show(value) + " -> " + hex(got) + ", reference gives " +
                   hex(want));
    }
  };
  // As for f16: the kept LSB, round bit and sticky bits for every sign, exponent and kept mantissa.
  for (std::uint32_t upper = 0; upper < (1u << 16); ++upper) {
    for (const std::uint32_t low :
         {0x0000u, 0x0001u, 0x0002u, 0x7FFEu, 0x7FFFu, 0x8000u, 0x8001u, 0x8002u, 0xFFFEu, 0xFFFFu}) {
      const auto value = std::bit_cast<float>(upper << 16 | low);
      if (!std::isnan(value)) check("f32", value, f32_to_bf16(value));
    }
  }
  std::mt19937_64 rng(kSeed + 2);
  for (int i = 0; i < 1000000; ++i) {
    const float value = random_non_nan_float(rng);
    check("f32", value, f32_to_bf16(value));
  }
  for (const double value : boundary_inputs<double>(reference, 3)) check("f64", value, f64_to_bf16(value));
  for (int i = 0; i < 1000000; ++i) {
    const double value = random_double(rng, -140, 130);
    check("f64", value, f64_to_bf16(value));
  }
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

// ---- f64 -> f32 against the hardware conversion ----

// IEEE overflow for f32: from the midpoint between FLT_MAX and 2^128 on, the result is infinity.
float expected_f32(double value) {
  constexpr double kOverflow = 0x1.FFFFFFp127;
  if (std::isnan(value) || std::fabs(value) <= std::numeric_limits<float>::max())
    return static_cast<float>(value);
  const float magnitude = std::fabs(value) >= kOverflow ? std::numeric_limits<float>::infinity()
                                                        : std::numeric_limits<float>::max();
  return std::signbit(value) ? -magnitude : magnitude;
}

TEST(DTypeSweep, F32FromF64MatchesHardware) {
  std::mt19937_64 rng(kSeed + 3);
  std::vector<double> inputs;
  for (int i = 0; i < 2000000; ++i) inputs.push_back(random_double(rng, -160, 130));
  for (const double edge : {0x1.FFFFFFp127, 0x1.FFFFFEp127, 0x1p-149, 0x1p-150, 0x1.8p-149, 0x1p-126}) {
    for (int step = -3; step <= 3; ++step) {
      const auto bits =
          std::bit_cast<std::uint64_t>(edge) + static_cast<std::uint64_t>(static_cast<std::int64_t>(step));
      inputs.push_back(std::bit_cast<double>(bits));
      inputs.push_back(-std::bit_cast<double>(bits));
    }
  }
  inputs.push_back(std::numeric_limits<double>::infinity());
  inputs.push_back(0.0);
  inputs.push_back(-0.0);
  FailureLog failures;
  for (const double value : inputs) {
    const float got = f64_to_f32(value);
    const float want = expected_f32(value);
    if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want)) {
      failures.add(show(value) + " -> " + show(got) + ", expected " + show(want));
    }
  }
  EXPECT_TRUE(std::isnan(f64_to_f32(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

// ---- the shared rounding step, fed magnitudes wider than f64 ----

// magnitude * 2^exponent rounded to 53 bits by "round to odd" (truncate, then set the last bit if
// anything was dropped). Rounding that to nearest again at 51 bits or fewer gives the same result as
// rounding the exact value once, which makes it a reference for inputs f64 cannot hold.
double round_to_odd_double(std::uint64_t magnitude, int exponent) {
  const int width = static_cast<int>(std::bit_width(magnitude));
  if (width <= 53) return std::ldexp(static_cast<double>(magnitude), exponent);
  const int drop = width - 53;
  const std::uint64_t kept = magnitude >> drop;
  const bool sticky = (magnitude & ((std::uint64_t{1} << drop) - 1)) != 0;
  return std::ldexp(static_cast<double>(kept | (sticky ? 1u : 0u)), exponent + drop);
}

TEST(DTypeSweep, RoundExactMatchesReferenceForWideMagnitudes) {
  const NearestReference f16(reference::kF16Spec);
  const NearestReference bf16(reference::kBF16Spec);
  const reference::BruteForceNearest e4m3(reference::kE4M3Spec);
  std::mt19937_64 rng(kSeed + 4);
  FailureLog failures;
  for (int i = 0; i < 300000; ++i) {
    const std::uint64_t width = 1 + rng() % 64;
    const std::uint64_t magnitude = (rng() >> (64 - width)) | (std::uint64_t{1} << (width - 1));
    const bool negative = (rng() & 1u) != 0;
    const int exponent = static_cast<int>(rng() % 360) - 220;
    const double approx = round_to_odd_double(magnitude, exponent) * (negative ? -1.0 : 1.0);
    const auto expect = [&](DType target, std::uint32_t want) {
      if (const auto got = round_exact_to_bits(target, negative, magnitude, exponent); got != want) {
        failures.add(std::string(dtype_name(target)) + " " + hex(magnitude) + " * 2^" +
                     std::to_string(exponent) + " -> " + hex(got) + ", expected " + hex(want));
      }
    };
    expect(DType::kF16, f16.encode(approx));
    expect(DType::kBF16, bf16.encode(approx));
    expect(DType::kF32, std::bit_cast<std::uint32_t>(expected_f32(approx)));
    if (exponent > -30 && exponent < 20) {  // where e4m3 has anything but zero or saturation
      expect(DType::kF8E4M3, e4m3.encode(approx));
    }
    // i64 sources: the hardware's int -> float conversion rounds once too.
    const std::uint64_t int_limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    if (exponent == 0 && magnitude <= int_limit) {
      const auto as_int =
          negative ? static_cast<std::int64_t>(~magnitude + 1) : static_cast<std::int64_t>(magnitude);
      expect(DType::kF32, std::bit_cast<std::uint32_t>(static_cast<float>(as_int)));
    }
  }
  // A tie that f64 would create: 2^60 + 2^52 + 1 is just above the bf16 midpoint, but as f64 it is
  // exactly on it (and would then round down to even).
  EXPECT_EQ(
      round_exact_to_bits(DType::kBF16, false, (std::uint64_t{1} << 60) + (std::uint64_t{1} << 52) + 1, 0),
      0x5D81u);
  EXPECT_EQ(round_exact_to_bits(DType::kBF16, false, (std::uint64_t{1} << 60) + (std::uint64_t{1} << 52), 0),
            0x5D80u);
  EXPECT_EQ(failures.count(), 0u) << failures.summary();
}

}  // namespace
}  // namespace kiln
