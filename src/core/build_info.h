// What this build of kiln is: its version and the git commit it was configured at, for `--version` and
// the environment records of benchmarks and studies.
#pragma once

#include <string_view>

namespace kiln {

std::string_view kiln_version();
// The commit's short hash ("unknown" when built outside a git checkout).
std::string_view kiln_commit();

}  // namespace kiln
