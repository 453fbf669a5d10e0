// Outputs never over inputs: before a command writes anything, each output path it was given is
// checked against the files it reads. Paths are compared as the files they name (links and `..`
// resolved, hard links included), so `-o ./m.safetensors` or a symlink to the checkpoint is caught.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// One path a command was given, with the option that named it ("--checkpoint", "-o").
struct NamedPath {
  std::string option;
  std::filesystem::path path;
};

// Fails naming both options when `output` is the same file as one of `inputs` (or as another output
// already checked: pass the outputs as inputs of the later checks). Paths that do not exist yet are
// never the same file as anything.
void refuse_output_over_inputs(const NamedPath& output, const std::vector<NamedPath>& inputs);

// The NamedPath of an optional path, or none.
std::optional<NamedPath> named_if(const std::string& option,
                                  const std::optional<std::filesystem::path>& path);

}  // namespace kiln
