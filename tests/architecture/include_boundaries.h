// Who may include what, checked over the source tree:
//   - src/ (shared code) includes nothing from families/, except that src/cli, the application layer,
//     may include families/registry.h;
//   - families/A/ includes only families/A/ and families/common/ (the shared family helpers);
//   - families/common/ includes only families/common/;
//   - files directly in families/ (the registry) may include any family;
//   - tests are not restricted.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::testing {

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

// Scans every C++ source and header under ROOT/src and ROOT/families.
IncludeScan scan_include_boundaries(const std::filesystem::path& root);

}  // namespace kiln::testing
