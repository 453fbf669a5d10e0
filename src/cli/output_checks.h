// Output files checked before any work starts: a benchmark, build or evaluation that ends by failing to
// write its report wastes the whole run. Each output's folder must exist (kiln makes none for an output
// file), the path must not name a folder, and it must not be one of the command's inputs.
#pragma once

#include <vector>

#include "io/output_guard.h"

namespace kiln::cli {

// A usage error naming the option and the path when `output`'s folder is missing or not a folder, or
// when `output` itself is a folder.
void check_output_path(const NamedPath& output);

// refuse_output_over_inputs(output, inputs), then check_output_path.
void check_output(const NamedPath& output, const std::vector<NamedPath>& inputs);

}  // namespace kiln::cli
