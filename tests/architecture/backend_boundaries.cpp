#include "backend_boundaries.h"

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

}  // namespace

std::optional<std::string> backend_violation(const std::string& file, const std::string& line) {
  // The cuda backend is a plugin loaded at run time (runtime/backend_plugin.h): outside its folder no file,
  // the registry included, compiles against it or asks whether it was built.
  static const std::regex kCudaInclude(R"(^\s*#\s*include\s*[<"](src/)?backends/cuda/)");
  static const std::regex kCudaBuild(R"(\bKILN_HAVE_CUDA\b)");
  if (!starts_with(file, "src/backends/cuda/")) {
    if (std::regex_search(line, kCudaInclude))
      return "the cuda backend is the plugin libkiln_cuda.so: only its own files include its headers";
    if (std::regex_search(line, kCudaBuild))
      return "KILN_HAVE_CUDA belongs to the cuda backend's plugin: ask the Backend what it can do";
  }
  if (knows_the_backends(file)) return std::nullopt;
  // A header in a folder under backends/ belongs to one backend; backends/backend.h is the interface.
  static const std::regex kBackendInclude(R"(^\s*#\s*include\s*[<"](src/)?backends/[^/">]+/)");
  static const std::regex kNameCheck(
      R"([!=]=\s*"(cpu|cpu-reference|cuda)\"|"(cpu|cpu-reference|cuda)\"\s*[!=]=)");
  if (std::regex_search(line, kBackendInclude))
    return "only src/backends/ and the backend registry include a backend's headers (use backends/backend.h)";
  if (std::regex_search(line, kNameCheck))
    return "a backend's name is no capability: ask the Backend (backends/backend.h) what it can do";
  return std::nullopt;
}

IncludeScan scan_backend_boundaries(const fs::path& root_dir) {
  const fs::path root = root_dir.lexically_normal();
  IncludeScan scan;
  for (const char* top : {"src", "families", "python"}) {
    for (const auto& path : source_files(root, top)) {
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
