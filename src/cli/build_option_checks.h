// `kiln build`'s options checked against each other and the manifest: an option the build would ignore
// (FP8 settings on an fp16 build, --percentile with another calibrator, ...) is a usage error naming
// both, never silently dropped.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "pipeline/fp8_settings.h"

namespace kiln::cli {

struct BuildChoices {
  const Manifest* manifest = nullptr;
  std::optional<std::string> precision;  // --precision as given
  std::optional<std::string> backend;    // --backend as given
  std::optional<std::int64_t> opt_level;  // --opt-level as given
  const pipeline::Fp8Options* fp8 = nullptr;
  const std::vector<std::string>* cuda_options = nullptr;  // --cuda-option NAME=VALUE as given
};

void check_build_options(const CLI::App& command, const BuildChoices& choices);

// --list-passes prints and exits: any other option given with it would be ignored.
void check_list_passes_alone(const CLI::App& command);

}  // namespace kiln::cli
