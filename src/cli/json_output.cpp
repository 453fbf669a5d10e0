#include "cli/json_output.h"

#include <filesystem>
#include <iostream>

#include "cli/output_checks.h"
#include "core/error.h"
#include "io/utf8_text.h"

namespace kiln::cli {

CLI::Option* add_json_file_option(CLI::App& command, std::optional<std::string>& target,
                                  const std::string& what) {
  return command.add_option("--json", target, "Write " + what + " as JSON to FILE ('-': stdout)")
      ->expected(0, 1)
      ->type_name("FILE");
}

bool json_to_stdout(const std::optional<std::string>& target) {
  return target && (target->empty() || *target == "-");
}

void check_json_target(const std::optional<std::string>& target, const std::vector<NamedPath>& inputs) {
  if (!target) return;
  if (target->empty()) {
    std::cerr << "kiln: warning: --json without FILE is the old spelling; write --json - for stdout\n";
    return;
  }
  if (*target == "-") return;
  check_output({"--json", *target}, inputs);
}

void write_json_report(const std::optional<std::string>& target, const nlohmann::json& report) {
  if (!target) return;
  if (json_to_stdout(target)) {
    std::cout << json_text(report);
    return;
  }
  write_json_file(*target, report);
}

}  // namespace kiln::cli
