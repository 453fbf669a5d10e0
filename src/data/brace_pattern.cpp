#include "data/brace_pattern.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "core/error.h"

namespace kiln {

namespace {

constexpr std::size_t kMaxNames = 1'000'000;

// The alternatives of one group's text: "a,b,c" or "LOW..HIGH".
std::vector<std::string> group_alternatives(const std::string& pattern, std::string_view group) {
  const std::size_t dots = group.find("..");
  if (dots == std::string_view::npos) {
    std::vector<std::string> alternatives;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = group.find(',', start);
      alternatives.emplace_back(group.substr(start, comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return alternatives;
  }
  const std::string_view low_text = group.substr(0, dots);
  const std::string_view high_text = group.substr(dots + 2);
  auto parse = [&](std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      fail(pattern, ": expected {LOW..HIGH} with non-negative integers, got {", group, "}");
    }
    return value;
  };
  const std::uint64_t low = parse(low_text);
  const std::uint64_t high = parse(high_text);
  if (low > high) fail(pattern, ": range {", group, "} counts down (expected LOW <= HIGH)");
  if (high - low >= kMaxNames) fail(pattern, ": range {", group, "} has more than ", kMaxNames, " values");
  // An end written with a leading zero ("000000") pads every value to the wider end's width.
  auto padded = [](std::string_view text) { return text.size() > 1 && text.front() == '0'; };
  const std::size_t width =
      padded(low_text) || padded(high_text) ? std::max(low_text.size(), high_text.size()) : 0;
  std::vector<std::string> alternatives;
  for (std::uint64_t value = low; value <= high; ++value) {
    std::string text = std::to_string(value);
    if (text.size() < width) text.insert(0, width - text.size(), '0');
    alternatives.push_back(std::move(text));
  }
  return alternatives;
}

}  // namespace

bool is_brace_pattern(const std::string& text) { return text.find('{') != std::string::npos; }

std::vector<std::string> expand_braces(const std::string& pattern) {
  std::vector<std::string> names{""};
  std::size_t at = 0;
  while (at < pattern.size()) {
    const std::size_t open = pattern.find_first_of("{}", at);
    const std::string literal = pattern.substr(at, open == std::string::npos ? std::string::npos : open - at);
    for (auto& name : names) name += literal;
    if (open == std::string::npos) break;
    if (pattern[open] == '}') fail(pattern, ": '}' at position ", open, " without a matching '{'");
    const std::size_t close = pattern.find_first_of("{}", open + 1);
    if (close == std::string::npos || pattern[close] == '{') {
      fail(pattern, ": '{' at position ", open, " is not closed (nested braces are not supported)");
    }
    const auto alternatives =
        group_alternatives(pattern, std::string_view(pattern).substr(open + 1, close - open - 1));
    if (names.size() * alternatives.size() > kMaxNames) {
      fail(pattern, ": expands to more than ", kMaxNames, " names");
    }
    std::vector<std::string> expanded;
    expanded.reserve(names.size() * alternatives.size());
    for (const auto& name : names) {
      for (const auto& alternative : alternatives) expanded.push_back(name + alternative);
    }
    names = std::move(expanded);
    at = close + 1;
  }
  return names;
}

}  // namespace kiln
