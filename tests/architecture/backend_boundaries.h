// What only the backends may know, checked over the source tree: everything GPU-specific goes through the
// Backend interface (src/backends/backend.h), so that a backend could be loaded as a plugin without the
// code above it changing. Outside src/backends/ and the backend registry (src/runtime/backend_registry.cpp,
// which makes the backends), a file under src/, families/ or python/
//   - includes no header of a backend's folder (backends/cuda/..., backends/cpu/..., backends/common/...);
//   - tests no backend's name (`backend == "cuda"`): it asks the backend what it can do instead;
//   - has no KILN_HAVE_CUDA block: what a build without CUDA lacks is a backend it does not list.
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
