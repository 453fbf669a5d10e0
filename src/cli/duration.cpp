#include "cli/duration.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cli/option_checks.h"

namespace kiln::cli {

namespace {

struct Unit {
  std::string_view suffix;
  double seconds;
};

// Longest suffix first, so "ms" is not read as "s" and "min" not as a stray letter.
constexpr Unit kUnits[] = {{"min", 60.0}, {"ms", 1e-3}, {"s", 1.0}};

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  Duration duration;
  double scale = 1.0;
  duration.bare = true;
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) {
      text.remove_suffix(unit.suffix.size());
      scale = unit.seconds;
      duration.bare = false;
      break;
    }
  }
  const std::string number(text);
  if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number.front())) || number.front() == '.'))
    return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0.0) return std::nullopt;
  duration.seconds = value * scale;
  return duration;
}

std::string duration_text(double seconds) {
  std::ostringstream out;
  if (seconds != 0.0 && seconds < 1.0) {
    out << seconds * 1e3 << "ms";
  } else if (seconds >= 60.0 && std::fmod(seconds, 60.0) == 0.0) {
    out << seconds / 60.0 << "min";
  } else {
    out << seconds << "s";
  }
  return out.str();
}

CLI::Option* add_duration_option(CLI::App& command, const std::string& name, double& seconds,
                                 const std::string& help, double low, double high, std::ostream& notices) {
  const std::string bounds = duration_text(low) + " and " + duration_text(high);
  CLI::Option* option = command.add_option_function<std::string>(
      name,
      [&seconds, &notices, name, bounds, low, high](const std::string& text) {
        const std::optional<Duration> duration = parse_duration(text);
        if (!duration) {
          usage_error(name + ": expected a duration such as 200ms, 2s or 1.5min, got '" + text + "'");
        }
        if (duration->seconds < low || duration->seconds > high) {
          usage_error(name + " must be between " + bounds + ", got " + text);
        }
        if (duration->bare) {
          notices << "kiln: warning: " << name << " " << text << " without a unit is read as seconds, which "
                  << "is deprecated: write " << name << " " << text << "s (or " << text << "ms)\n";
        }
        seconds = duration->seconds;
      },
      help + " (a duration such as 200ms, 2s or 1.5min, between " + bounds + ")");
  option->type_name("DURATION");
  return option;
}

}  // namespace kiln::cli
