// Duration options: `200ms`, `2s`, `1.5s`, `1min`. A bare number keeps its old meaning (seconds) and
// prints a one-line deprecation notice, since trtexec reads the same spelling as milliseconds.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace kiln::cli {

struct Duration {
  double seconds = 0.0;
  bool bare = false;  // written without a unit
};

// nullopt when `text` is not a non-negative number with an optional unit (ms, s, min).
std::optional<Duration> parse_duration(std::string_view text);

// Adds a duration option storing seconds into `seconds`, within [low, high] seconds (both printed with
// units). The notice for a bare number goes to `notices`.
CLI::Option* add_duration_option(CLI::App& command, const std::string& name, double& seconds,
                                 const std::string& help, double low, double high,
                                 std::ostream& notices = std::cerr);

// "200ms", "2s", "1.5min": how --help and messages write a number of seconds.
std::string duration_text(double seconds);

}  // namespace kiln::cli
