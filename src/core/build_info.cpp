#include "core/build_info.h"

#include "kiln_git_commit.h"  // generated at build time (cmake/KilnGitCommit.cmake)

namespace kiln {

std::string_view kiln_version() { return KILN_VERSION; }
std::string_view kiln_commit() { return KILN_GIT_COMMIT; }

}  // namespace kiln
