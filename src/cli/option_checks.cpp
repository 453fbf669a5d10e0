#include "cli/option_checks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>

#include "backends/backend.h"
#include "core/error.h"

namespace kiln::cli {

std::string number_text(double value) {
  std::ostringstream out;
  out << value;  // 1 for 1.0, 0.25 for 0.25: as a person writes it
  return out.str();
}

CLI::Validator whole_between(std::int64_t low, std::int64_t high) {
  const std::string bounds = std::to_string(low) + " and " + std::to_string(high);
  return CLI::Validator(
      [low, high, bounds](std::string& text) -> std::string {
        std::int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto parsed = std::from_chars(text.data(), end, value);
        if (parsed.ec == std::errc::result_out_of_range) return "must be between " + bounds + ", got " + text;
        if (parsed.ec != std::errc() || parsed.ptr != end)
          return "expected a whole number between " + bounds + ", got '" + text + "'";
        if (value < low || value > high) return "must be between " + bounds + ", got " + text;
        return {};
      },
      "[" + std::to_string(low) + ", " + std::to_string(high) + "]");
}

CLI::Validator real_between(double low, double high) {
  const std::string bounds = number_text(low) + " and " + number_text(high);
  return CLI::Validator(
      [low, high, bounds](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
          return "expected a number between " + bounds + ", got '" + text + "'";
        if (value < low || value > high) return "must be between " + bounds + ", got " + text;
        return {};
      },
      "[" + number_text(low) + ", " + number_text(high) + "]");
}

bool backend_takes_options(const std::string& backend) {
  const std::vector<std::string_view> built_in = backend_names();
  if (std::find(built_in.begin(), built_in.end(), backend) == built_in.end()) return true;
  return make_backend(backend)->takes_options();
}

std::map<std::string, std::string> resolved_cuda_options(const std::vector<std::string>& assignments,
                                                         const std::string& backend) {
  const std::unique_ptr<Backend> cuda = make_backend(backend);
  try {
    return cuda->resolve_options(assignments);
  } catch (const Error& e) {
    usage_error(cat("--cuda-option: ", e.what()));
  }
}

std::string alternatives_text(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

CLI::Validator one_of(std::vector<std::string> names) {
  const std::string listed = alternatives_text(names);
  return CLI::Validator(
      [names = std::move(names), listed](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return {};
        return "expected " + listed + ", got '" + text + "'";
      },
      listed);
}

CLI::Validator known_backend() { return one_of({"cpu", "cpu-reference", "cuda"}); }

void usage_error(const std::string& message) { throw CLI::ValidationError(message); }

std::string first_given(const CLI::App& command, std::initializer_list<const char*> options) {
  for (const char* name : options) {
    const CLI::Option* option = command.get_option_no_throw(name);
    if (option != nullptr && option->count() > 0) return name;
  }
  return {};
}

void refuse_unless(bool applies, const CLI::App& command, std::initializer_list<const char*> options,
                   const std::string& needs, const std::string& reason) {
  if (applies) return;
  const std::string given = first_given(command, options);
  if (given.empty()) return;
  usage_error(given + " applies only " + needs + ", but " + reason);
}

void add_warning_alias(CLI::App& command, CLI::Option* option, const std::string& old_name) {
  const std::string current = option->get_name();
  command
      .add_option_function<std::string>(old_name,
                                        [option, old_name, current](const std::string& value) {
                                          std::cerr << "kiln: warning: " << old_name << " is an old name of "
                                                    << current << "; write " << current << " " << value
                                                    << "\n";
                                          option->clear();
                                          option->add_result(value);
                                          option->run_callback();
                                        })
      ->group("");  // hidden from --help: --help documents the one name
}

}  // namespace kiln::cli
