// What only the backends may know, checked over the source tree: everything GPU-specific goes through the
// Backend interface (src/backends/backend.h), for the cuda backend is a plugin loaded at run time
// (libkiln_cuda.so, runtime/backend_plugin.h). Outside src/backends/cuda/, no file includes the cuda
// backend's headers or has a KILN_HAVE_CUDA block (what a machine without the plugin lacks is a backend
// kiln does not list). Outside src/backends/ and the backend registry (src/runtime/backend_registry.cpp,
// which makes the CPU backends), a file under src/, families/ or python/
//   - includes no header of a backend's folder (backends/cpu/..., backends/common/...);
//   - tests no backend's name (`backend == "cuda"`): it asks the backend what it can do instead.
// Tests are not restricted: they test the backends themselves.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "include_boundaries.h"

namespace kiln::testing {

// Why `line` of the repository-relative `file` reaches past the Backend interface; nullopt when it does not.
std::optional<std::string> backend_violation(const std::string& file, const std::string& line);

// Scans every C++ source and header under ROOT/src, ROOT/families and ROOT/python.
IncludeScan scan_backend_boundaries(const std::filesystem::path& root);

}  // namespace kiln::testing
