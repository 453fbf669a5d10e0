#include "cli/output_checks.h"

#include <filesystem>

#include "cli/option_checks.h"

namespace kiln::cli {

namespace fs = std::filesystem;

void check_output_path(const NamedPath& output) {
  const std::string given = output.option + " " + output.path.string();
  std::error_code error;
  if (fs::is_directory(output.path, error)) usage_error(given + ": names a folder; give a file path");
  const fs::path folder = output.path.has_parent_path() ? output.path.parent_path() : fs::path(".");
  const fs::file_status status = fs::status(folder, error);
  if (!fs::exists(status)) {
    usage_error(given + ": folder '" + folder.string() +
                "' does not exist (make it first, or choose another path)");
  }
  if (!fs::is_directory(status)) usage_error(given + ": '" + folder.string() + "' is not a folder");
}

void check_output(const NamedPath& output, const std::vector<NamedPath>& inputs) {
  refuse_output_over_inputs(output, inputs);  // first: `-o missing/../model.safetensors` is the input
  check_output_path(output);
}

}  // namespace kiln::cli
