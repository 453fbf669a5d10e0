// `--json FILE` on the commands that print reports (inspect, validate, dataset), as on build, run,
// bench and eval: `-` is stdout. The old spelling, `--json` alone, still prints to stdout, with a warning.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/output_guard.h"

namespace kiln::cli {

CLI::Option* add_json_file_option(CLI::App& command, std::optional<std::string>& target,
                                  const std::string& what);

// True when the report goes to stdout (so the text output is left out).
bool json_to_stdout(const std::optional<std::string>& target);

// Refuses a --json FILE naming one of `inputs` or a folder; warns for the old bare `--json`.
void check_json_target(const std::optional<std::string>& target, const std::vector<NamedPath>& inputs);

// Writes `report` to stdout for "-" (or the bare switch), else to the file (temp file, then renamed).
void write_json_report(const std::optional<std::string>& target, const nlohmann::json& report);

}  // namespace kiln::cli
