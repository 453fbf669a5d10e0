// Error reporting: every failure a user can cause is a kiln::Error with one line that names the
// file, key or layer concerned and what was expected.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln {

// A message is one line even when it quotes user text holding line breaks (a TOML string "a\nb"):
// they are shown escaped, as the user would have typed them.
inline std::string escape_line_breaks(const std::string& text) {
  std::string line;
  line.reserve(text.size());
  for (const char c : text) {
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else {
      line += c;
    }
  }
  return line;
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(escape_line_breaks(message)) {}
};

// Concatenates anything streamable into one string: cat("layer ", name, ": expected ", n).
template <typename... Parts>
std::string cat(Parts&&... parts) {
  std::ostringstream out;
  ((out << std::forward<Parts>(parts)), ...);  // a comma fold also accepts no parts at all
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(cat(std::forward<Parts>(parts)...));
}

// Checks a condition that user input can break; internal invariants use assert instead.
template <typename... Parts>
void require(bool condition, Parts&&... parts) {
  if (!condition) fail(std::forward<Parts>(parts)...);
}

}  // namespace kiln
