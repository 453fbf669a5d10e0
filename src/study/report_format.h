// How study reports write numbers: fixed digits, percentages, scientific notation; "n/a" for a
// non-finite value.
#pragma once

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace kiln {

inline std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "n/a";
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

inline std::string scientific(double value) {
  if (!std::isfinite(value)) return "n/a";
  std::ostringstream text;
  text << std::scientific << std::setprecision(2) << value;
  return text.str();
}

inline std::string percent(double fraction) { return fixed(100.0 * fraction, 2) + "%"; }

}  // namespace kiln
