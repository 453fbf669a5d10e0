// Who may include what, checked over the source tree.
//
// Layers, lowest first; a file may include its own layer and the layers below it, never one above:
//
//   core < io < data < graph < plan < reference < passes < backends < runtime < builder < eval < quant
//        < manifest < study < families < pipeline < sdk < cli
//
// A layer is a folder of src/ (families/ is one layer), with no exceptions: the reference kernels (every
// operator's meaning, which constant folding and every backend build on) are src/reference/, the Backend
// interface every backend implements is src/backends/backend.h.
// Sub-folders of src/backends (common, cpu, cuda) are one layer. A src/ folder missing from the order is
// itself a violation: add it.
//
// The cuda backend's rooms, in the same way, lowest first (src/backends/cuda/<room>/; the backend's own files
// are in the folder itself; cuda_util.h and cuda_options.h, which include no room, any room may include):
//
//   kernels < tactics < convolution < program < backend
//
// Besides the order:
//   - of src/, only src/pipeline, src/sdk and src/cli include the families, and only families/registry.h;
//   - families/A/ includes only families/A/ and families/common/ (the shared family helpers);
//   - families/common/ includes only families/common/; files directly in families/ (the registry) may
//     include any family;
//   - benchmarks/ and testing/ (test support shared by tests and benchmarks) never include tests/;
//   - tests are not restricted.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::testing {

// The layer order above, lowest first.
const std::vector<std::string_view>& layer_order();
// The cuda backend's rooms above, lowest first.
const std::vector<std::string_view>& cuda_room_order();

// The layer of a repository-relative file ("src/graph/graph.h" -> "graph", "families/yolov10/x.h" ->
// "families"); nullopt outside the layered tree (tests/, benchmarks/, testing/, third-party headers).
std::optional<std::string> layer_of(const std::string& path);

struct IncludeViolation {
  std::string file;          // repository-relative, e.g. "families/timm_resnet/builder.cpp"
  int line = 0;              // 1-based
  std::string include_line;  // as written
  std::string reason;
};

struct IncludeScan {
  int files_scanned = 0;
  std::vector<IncludeViolation> violations;
};

// Why `from` may not include `to` (both repository-relative, '/'-separated); nullopt when it may.
std::optional<std::string> include_violation(const std::string& from, const std::string& to);

// The C++ sources and headers under ROOT/TOP, sorted; none when the folder is missing.
std::vector<std::filesystem::path> source_files(const std::filesystem::path& root, std::string_view top);

// Fails the running test with one line per violation of `scan`, which must have read some files.
void expect_no_violations(const IncludeScan& scan, const std::filesystem::path& root);

// Scans every C++ source and header under ROOT/src, ROOT/families, ROOT/benchmarks and ROOT/testing.
IncludeScan scan_include_boundaries(const std::filesystem::path& root);

}  // namespace kiln::testing
