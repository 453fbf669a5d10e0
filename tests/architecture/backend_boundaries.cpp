#include "backend_boundaries.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <string_view>
#include <vector>

namespace kiln::testing {

namespace {

namespace fs = std::filesystem;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The files that may know the backends: the backends themselves and the registry that makes them.
bool knows_the_backends(const std::string& file) {
  return starts_with(file, "src/backends/") || file == "src/runtime/backend_registry.cpp";
}

bool is_source(const fs::path& path) {
  static const std::vector<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inl"};
  return std::find(kExtensions.begin(), kExtensions.end(), path.extension().string()) != kExtensions.end();
}

}  // namespace

std::optional<std::string> backend_violation(const std::string& file, const std::string& line) {
  if (knows_the_backends(file)) return std::nullopt;
  // A header in a folder under backends/ belongs to one backend; backends/backend.h is the interface.
  static const std::regex kBackendInclude(R"(^\s*#\s*include\s*[<"](src/)?backends/[^/">]+/)");
  static const std::regex kNameCheck(
      R"([!=]=\s*"(cpu|cpu-reference|cuda)\"|"(cpu|cpu-reference|cuda)\"\s*[!=]=)");
  static const std::regex kCudaBuild(R"(\bKILN_HAVE_CUDA\b)");
  if (std::regex_search(line, kBackendInclude))
    return "only src/backends/ and the backend registry include a backend's headers (use backends/backend.h)";
  if (std::regex_search(line, kNameCheck))
    return "a backend's name is no capability: ask the Backend (backends/backend.h) what it can do";
  if (std::regex_search(line, kCudaBuild))
    return "KILN_HAVE_CUDA belongs to src/backends/ and the registry: ask the Backend what it can do";
  return std::nullopt;
}

IncludeScan scan_backend_boundaries(const fs::path& root_dir) {
  const fs::path root = root_dir.lexically_normal();
  IncludeScan scan;
  for (const char* top : {"src", "families", "python"}) {
    if (!fs::is_directory(root / top)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      ++scan.files_scanned;
      const std::string file = path.lexically_normal().lexically_relative(root).generic_string();
      std::ifstream in(path);
      std::string text;
      for (int line = 1; std::getline(in, text); ++line) {
        if (auto reason = backend_violation(file, text))
          scan.violations.push_back({file, line, text, *reason});
      }
    }
  }
  return scan;
}

}  // namespace kiln::testing
