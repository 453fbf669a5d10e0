#include "io/output_guard.h"

#include <system_error>

#include "core/error.h"

namespace kiln {

namespace {

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error) && !error) return true;  // also links and hard links
  // A path through a folder that does not exist (`sub/../m.safetensors`) still names the file.
  const auto resolved_a = std::filesystem::weakly_canonical(a, error);
  if (error) return false;
  const auto resolved_b = std::filesystem::weakly_canonical(b, error);
  return !error && resolved_a == resolved_b;
}

}  // namespace

void refuse_output_over_inputs(const NamedPath& output, const std::vector<NamedPath>& inputs) {
  if (output.path.empty()) return;
  for (const NamedPath& input : inputs) {
    if (input.path.empty() || !same_file(output.path, input.path)) continue;
    fail(output.path.string(), ": ", output.option, " names the same file as ", input.option, " '",
         input.path.string(), "'; kiln never writes over its inputs: choose another ", output.option,
         " path");
  }
}

std::optional<NamedPath> named_if(const std::string& option,
                                  const std::optional<std::filesystem::path>& path) {
  if (!path) return std::nullopt;
  return NamedPath{option, *path};
}

}  // namespace kiln
