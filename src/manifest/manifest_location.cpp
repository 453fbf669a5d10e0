#include "manifest/manifest_location.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {

namespace {

bool is_bare_name(std::string_view argument) {
  return !argument.empty() && std::all_of(argument.begin(), argument.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

std::filesystem::path resolve_manifest_path(std::string_view argument,
                                            const std::filesystem::path& families_dir) {
  namespace fs = std::filesystem;
  const fs::path path(argument);
  std::error_code error;
  if (fs::is_directory(path, error)) {
    const fs::path manifest = path / kManifestFileName;
    require(fs::is_regular_file(manifest, error), argument, ": directory has no ", kManifestFileName);
    return manifest;
  }
  if (fs::exists(path, error)) {
    require(fs::is_regular_file(path, error), argument, ": not a regular file");
    return path;
  }
  require(is_bare_name(argument), argument, ": no such file or directory");
  const fs::path manifest = families_dir / argument / kManifestFileName;
  require(fs::is_regular_file(manifest, error), argument,
          ": not a file, a directory or a family with a manifest (no ", manifest.string(), ")");
  return manifest;
}

std::vector<std::filesystem::path> find_family_manifests(const std::filesystem::path& families_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  require(fs::is_directory(families_dir, error), families_dir.string(),
          ": no families directory here (run from the repository root or name the directory)");
  std::vector<fs::path> manifests;
  for (const auto& entry : fs::directory_iterator(families_dir)) {
    const fs::path manifest = entry.path() / kManifestFileName;
    if (entry.is_directory() && fs::is_regular_file(manifest, error)) manifests.push_back(manifest);
  }
  std::sort(manifests.begin(), manifests.end());
  return manifests;
}

}  // namespace kiln
