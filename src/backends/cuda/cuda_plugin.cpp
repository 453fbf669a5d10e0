// libkiln_cuda.so's entry points (backends/plugin_entry.h).
#include <type_traits>

#include "backends/cuda/cuda_backend.h"
#include "backends/plugin_entry.h"
#include "kiln_git_commit.h"  // generated at build time (cmake/KilnGitCommit.cmake)

extern "C" {

__attribute__((visibility("default"))) const char* kiln_plugin_build() {
  return KILN_VERSION " (commit " KILN_GIT_COMMIT ")";
}

__attribute__((visibility("default"))) kiln::Backend* kiln_plugin_make_backend() {
  return new kiln::CudaBackend();
}

}  // extern "C"

// The entry points' types are the contract's: a change on either side fails to compile here.
static_assert(std::is_same_v<decltype(&kiln_plugin_build), KilnPluginBuildFunction>);
static_assert(std::is_same_v<decltype(&kiln_plugin_make_backend), KilnPluginMakeFunction>);
