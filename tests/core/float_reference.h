// Independent models of the narrow float formats, for the dtype tests. Values come from each format's
// defining formula evaluated in f64, and rounding from comparisons against those values, so nothing
// here shares logic with the bit manipulation in src/core/dtype.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::reference {

struct FormatSpec {
  std::string_view name;
  int total_bits;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool ieee_specials;  // the all-ones exponent holds inf and NaN; otherwise only all-ones codes are NaN
  bool saturates;      // overflow clamps to the largest finite value instead of becoming infinity
};

inline constexpr FormatSpec kF16Spec{"f16", 16, 5, 10, 15, true, false};
inline constexpr FormatSpec kBF16Spec{"bf16", 16, 8, 7, 127, true, false};
inline constexpr FormatSpec kE4M3Spec{"e4m3", 8, 4, 3, 7, false, true};

inline std::uint32_t code_count(const FormatSpec& spec) { return 1u << spec.total_bits; }
inline std::uint32_t sign_bit(const FormatSpec& spec) { return 1u << (spec.total_bits - 1); }

// The value a code stands for, straight from the format definition:
// subnormal f * 2^(1 - bias - m), normal (2^m + f) * 2^(e - bias - m).
inline double reference_value(const FormatSpec& spec, std::uint32_t code) {
  const std::uint32_t exponent_ones = (1u << spec.exponent_bits) - 1;
  const std::uint32_t mantissa_ones = (1u << spec.mantissa_bits) - 1;
  const std::uint32_t exponent = (code >> spec.mantissa_bits) & exponent_ones;
  const std::uint32_t mantissa = code & mantissa_ones;
  double magnitude = 0.0;
  if (spec.ieee_specials && exponent == exponent_ones) {
    magnitude =
        mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!spec.ieee_specials && exponent == exponent_ones && mantissa == mantissa_ones) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - spec.bias - spec.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>((1u << spec.mantissa_bits) + mantissa),
                           static_cast<int>(exponent) - spec.bias - spec.mantissa_bits);
  }
  return (code & sign_bit(spec)) != 0 ? -magnitude : magnitude;
}

// Brute force over every code: the finite value nearest to x with x's sign, ties to the even code.
// "a is nearer than b" is decided against their midpoint, which is exact in f64 for these formats, so
// no distance is ever rounded. An infinite x therefore lands on the largest finite value. NaN is the
// caller's business.
class BruteForceNearest {
 public:
  explicit BruteForceNearest(const FormatSpec& spec) {
    for (std::uint32_t code = 0; code < code_count(spec); ++code) {
      const double value = reference_value(spec, code);
      if (!std::isfinite(value)) continue;
      ((code & sign_bit(spec)) != 0 ? negative_ : positive_).push_back({code, value});
    }
  }

  std::uint32_t encode(double x) const {
    const auto& candidates = std::signbit(x) ? negative_ : positive_;
    Candidate best = candidates.front();
    for (const Candidate& candidate : candidates) {
      const double low = std::min(candidate.value, best.value);
      const double high = std::max(candidate.value, best.value);
      const double middle = low / 2 + high / 2;
      const bool take = x == middle ? (candidate.code & 1u) == 0 : (x < middle) == (candidate.value == low);
      if (take) best = candidate;
    }
    return best.code;
  }

 private:
  struct Candidate {
    std::uint32_t code;
    double value;
  };
  std::vector<Candidate> positive_;  // finite codes of each sign
  std::vector<Candidate> negative_;
};

// The same rounding for formats too large to scan per query: a binary search over the finite
// non-negative values (which the tests check ascend with their codes), deciding against midpoints.
// For formats with infinity, the step past the largest value stands for 2^(emax + 1), which IEEE's
// "round as if the exponent were unbounded, then overflow" turns into infinity.
class NearestReference {
 public:
  explicit NearestReference(const FormatSpec& spec) : spec_(spec) {
    for (std::uint32_t code = 0; code < sign_bit(spec); ++code) {
      const double value = reference_value(spec, code);
      if (!std::isfinite(value)) break;
      values_.push_back(value);
    }
  }

  const FormatSpec& spec() const { return spec_; }
  // Finite non-negative values, indexed by code.
  const std::vector<double>& values() const { return values_; }
  std::uint32_t max_finite_code() const { return static_cast<std::uint32_t>(values_.size() - 1); }

  std::uint32_t encode(double x) const {
    const std::uint32_t sign = std::signbit(x) ? sign_bit(spec_) : 0u;
    const double magnitude = std::fabs(x);
    const std::uint32_t top = max_finite_code();
    if (magnitude >= values_[top]) {
      if (spec_.saturates || magnitude == values_[top]) return sign | top;
      const double step = values_[top] - values_[top - 1];
      return sign | pick(top, values_[top], values_[top] + step, magnitude);
    }
    if (magnitude <= values_[1])
      return sign | pick(0, values_[0], values_[1], magnitude);  // skips the search
    const auto above = std::upper_bound(values_.begin(), values_.end(), magnitude);
    const auto high = static_cast<std::uint32_t>(above - values_.begin());
    return sign | pick(high - 1, values_[high - 1], values_[high], magnitude);
  }

 private:
  // Chooses between code `low` (value low_value) and low + 1 (value high_value) for a magnitude in
  // between.
  static std::uint32_t pick(std::uint32_t low, double low_value, double high_value, double magnitude) {
    const double middle = low_value / 2 + high_value / 2;
    if (magnitude < middle) return low;
    if (magnitude > middle) return low + 1;
    return (low & 1u) == 0 ? low : low + 1;
  }

  FormatSpec spec_;
  std::vector<double> values_;
};

// Counts failures and keeps the first few descriptions, so that one broken rule does not print
// sixty thousand lines.
class FailureLog {
 public:
  void add(std::string what) {
    if (count_++ < kKept) first_.push_back(std::move(what));
  }
  std::uint64_t count() const { return count_; }
  std::string summary() const {
    std::string text = std::to_string(count_) + " failures; first:";
    for (const auto& line : first_) text += "\n  " + line;
    return text;
  }

 private:
  static constexpr std::uint64_t kKept = 12;
  std::uint64_t count_ = 0;
  std::vector<std::string> first_;
};

inline std::string hex(std::uint64_t bits) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(bits));
  return buffer;
}

inline std::string show(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g (%a)", value, value);
  return buffer;
}

}  // namespace kiln::reference
