#include "include_boundaries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <regex>
#include <string_view>

namespace kiln::testing {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFamilies = "families/";
constexpr std::string_view kRegistryHeader = "families/registry.h";
constexpr std::array<std::string_view, 9> kSourceExtensions = {".h",   ".hpp", ".hh",  ".cpp", ".cc",
                                                               ".cxx", ".cu",  ".cuh", ".inl"};

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// "timm_resnet" for "families/timm_resnet/builder.cpp"; "" for a file directly in families/.
std::string family_of(std::string_view path) {
  const std::string_view rest = path.substr(kFamilies.size());
  const std::size_t slash = rest.find('/');
  return slash == std::string_view::npos ? "" : std::string(rest.substr(0, slash));
}

int rank_of(std::string_view layer) {
  const auto& order = layer_order();
  const auto found = std::find(order.begin(), order.end(), layer);
  return found == order.end() ? -1 : static_cast<int>(found - order.begin());
}

std::optional<std::string> layer_violation(const std::string& from, const std::string& to) {
  const auto from_layer = layer_of(from);
  const auto to_layer = layer_of(to);
  if (!from_layer || !to_layer) return std::nullopt;
  for (const std::string& layer : {*from_layer, *to_layer}) {
    if (rank_of(layer) < 0) return "src/" + layer + " is in no layer of the order (add it)";
  }
  if (rank_of(*to_layer) <= rank_of(*from_layer)) return std::nullopt;
  return "the " + *from_layer + " layer must not include the " + *to_layer + " layer above it";
}

// The repository path an include names: relative to the including file first (for quoted includes),
// then to the include roots (the repository and src/). An include of families/ that names no file yet
// still counts as one.
std::optional<std::string> resolve_include(const fs::path& root, const fs::path& including_dir, bool quoted,
                                           const std::string& spelled) {
  std::vector<fs::path> candidates;
  if (quoted) candidates.push_back(including_dir / spelled);
  candidates.push_back(root / spelled);
  candidates.push_back(root / "src" / spelled);
  for (const auto& candidate : candidates) {
    std::error_code error;
    if (!fs::is_regular_file(candidate, error)) continue;
    const std::string relative = candidate.lexically_normal().lexically_relative(root).generic_string();
    if (!relative.empty() && !starts_with(relative, "..")) return relative;
  }
  const std::string normal = fs::path(spelled).lexically_normal().generic_string();
  if (starts_with(normal, kFamilies)) return normal;
  return std::nullopt;
}

// A quoted include found through an include path into tests/ (a build that adds tests/backends to a
// benchmark's include directories): the file under tests/ it names, if any.
std::optional<std::string> find_under_tests(const fs::path& root, const std::string& spelled) {
  std::error_code error;
  if (!fs::is_directory(root / "tests", error)) return std::nullopt;
  for (const auto& entry : fs::recursive_directory_iterator(root / "tests")) {
    if (!entry.is_directory() || !fs::is_regular_file(entry.path() / spelled, error)) continue;
    return (entry.path() / spelled).lexically_normal().lexically_relative(root).generic_string();
  }
  return std::nullopt;
}

std::optional<std::string> family_violation(const std::string& from, const std::string& to) {
  if (!starts_with(to, kFamilies)) return std::nullopt;
  if (starts_with(from, "src/")) {
    if (starts_with(from, "src/cli/") || starts_with(from, "src/pipeline/") ||
        starts_with(from, "src/sdk/")) {
      if (to == kRegistryHeader) return std::nullopt;
      return "the application layers (src/pipeline, src/sdk, src/cli) may include families/registry.h only";
    }
    return "shared code under src/ must not include anything from families/";
  }
  if (!starts_with(from, kFamilies)) return std::nullopt;
  const std::string from_family = family_of(from);
  const std::string to_family = family_of(to);
  if (from_family.empty()) return std::nullopt;  // the registry lists every family
  if (to_family.empty())
    return "only src/pipeline, src/sdk, src/cli and tests may include the family registry";
  if (to_family == "common" || to_family == from_family) return std::nullopt;
  if (from_family == "common") return "families/common is shared by every family and must not include one";
  return "families/" + from_family + " must not include families/" + to_family +
         " (share code through families/common)";
}

// The room of a file of the cuda backend ("convolution" for src/backends/cuda/convolution/x.h), "" for
// its shared headers, "backend" for the backend's other files; nullopt outside the cuda backend.
std::optional<std::string> cuda_room_of(std::string_view path) {
  constexpr std::string_view kCuda = "src/backends/cuda/";
  if (!starts_with(path, kCuda)) return std::nullopt;
  const std::string_view rest = path.substr(kCuda.size());
  if (rest == "cuda_util.h" || rest == "cuda_options.h") return "";
  const std::size_t slash = rest.find('/');
  return slash == std::string_view::npos ? "backend" : std::string(rest.substr(0, slash));
}

std::optional<std::string> cuda_room_violation(const std::string& from, const std::string& to) {
  const auto from_room = cuda_room_of(from);
  const auto to_room = cuda_room_of(to);
  if (!from_room || !to_room || to_room->empty()) return std::nullopt;
  const auto& order = cuda_room_order();
  const auto rank = [&](const std::string& room) { return std::ranges::find(order, room) - order.begin(); };
  for (const std::string& room : {*from_room, *to_room}) {
    if (rank(room) == static_cast<std::ptrdiff_t>(order.size()) && !room.empty()) {
      return "src/backends/cuda/" + room + " is in no room of the cuda backend's order (add it)";
    }
  }
  if (from_room->empty()) return "the cuda backend's shared headers include no room";
  if (rank(*to_room) <= rank(*from_room)) return std::nullopt;
  return "the cuda backend's " + *from_room + " room must not include its " + *to_room + " room above it";
}

}  // namespace

const std::vector<std::string_view>& cuda_room_order() {
  static const std::vector<std::string_view> order = {"kernels", "tactics", "convolution", "program",
                                                      "backend"};
  return order;
}

const std::vector<std::string_view>& layer_order() {
  static const std::vector<std::string_view> order = {
      "core",    "io",   "data",  "graph",    "plan",  "reference", "passes",   "backends", "runtime",
      "builder", "eval", "quant", "manifest", "study", "families",  "pipeline", "sdk",      "cli"};
  return order;
}

std::optional<std::string> layer_of(const std::string& path) {
  if (starts_with(path, kFamilies)) return "families";
  if (!starts_with(path, "src/")) return std::nullopt;
  const std::string_view rest = std::string_view(path).substr(4);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return std::string(rest.substr(0, slash));
}

std::optional<std::string> include_violation(const std::string& from, const std::string& to) {
  const bool support = starts_with(from, "benchmarks/") || starts_with(from, "testing/");
  if (support && starts_with(to, "tests/")) {
    return "benchmarks/ and testing/ must not include tests/ (share test support through testing/)";
  }
  if (auto reason = family_violation(from, to)) return reason;
  if (auto reason = cuda_room_violation(from, to)) return reason;
  return layer_violation(from, to);
}

std::vector<fs::path> source_files(const fs::path& root, std::string_view top) {
  std::vector<fs::path> files;
  if (!fs::is_directory(root / top)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
    const std::string extension = entry.path().extension().string();
    const bool source =
        std::find(kSourceExtensions.begin(), kSourceExtensions.end(), extension) != kSourceExtensions.end();
    if (entry.is_regular_file() && source) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void expect_no_violations(const IncludeScan& scan, const fs::path& root) {
  EXPECT_GT(scan.files_scanned, 10) << "scanned too few files under " << root;
  for (const auto& violation : scan.violations) {
    ADD_FAILURE() << violation.file << ":" << violation.line << ": " << violation.include_line << "  -- "
                  << violation.reason;
  }
}

IncludeScan scan_include_boundaries(const fs::path& root_dir) {
  const fs::path root = root_dir.lexically_normal();
  static const std::regex kInclude(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  IncludeScan scan;
  for (const char* top : {"src", "families", "benchmarks", "testing"}) {
    for (const auto& file : source_files(root, top)) {
      ++scan.files_scanned;
      const std::string from = file.lexically_normal().lexically_relative(root).generic_string();
      std::ifstream in(file);
      std::string text;
      for (int line = 1; std::getline(in, text); ++line) {
        std::smatch match;
        if (!std::regex_search(text, match, kInclude)) continue;
        const bool quoted = match[1] == "\"";
        auto to = resolve_include(root, file.parent_path(), quoted, match[2]);
        if (!to && quoted && !starts_with(from, "src/") && !starts_with(from, kFamilies)) {
          to = find_under_tests(root, match[2]);
        }
        if (!to) continue;
        if (auto reason = include_violation(from, *to)) {
          scan.violations.push_back({from, line, text, *reason});
        }
      }
    }
  }
  return scan;
}

}  // namespace kiln::testing
