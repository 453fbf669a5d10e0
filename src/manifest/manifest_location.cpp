#include "manifest/manifest_location.h"

#include <dlfcn.h>

#include <algorithm>

#include "core/error.h"

namespace kiln {

namespace {

bool is_bare_name(std::string_view argument) {
  return !argument.empty() && std::all_of(argument.begin(), argument.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// Where an install puts the family manifests, below its prefix. The Python wheel's package carries its
// own share/kiln beside its module (tools/make_wheel.py), so the binary's folder itself counts as a prefix.
constexpr std::string_view kInstalledFamiliesDir = "share/kiln/families";
constexpr int kPrefixLevels = 5;  // the folder, then <prefix>/lib/python3/dist-packages/kiln up to <prefix>

// The folders of the running program and of the binary holding this function.
std::vector<std::filesystem::path> binary_folders() {
  namespace fs = std::filesystem;
  std::vector<fs::path> folders;
  std::error_code error;
  if (const fs::path program = running_program(); !program.empty()) folders.push_back(program.parent_path());
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&binary_folders), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] == '/') {
    folders.push_back(fs::weakly_canonical(info.dli_fname, error).parent_path());
  }
  return folders;
}

}  // namespace

std::filesystem::path running_program() {
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : program;
}

std::filesystem::path default_families_dir() {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path here{kDefaultFamiliesDir};
  if (fs::is_directory(here, error)) return here;
  for (fs::path folder : binary_folders()) {
    for (int level = 0; level < kPrefixLevels && !folder.empty(); ++level, folder = folder.parent_path()) {
      const fs::path installed = folder / kInstalledFamiliesDir;
      if (fs::is_directory(installed, error)) return installed;
      if (folder == folder.parent_path()) break;
    }
  }
  return here;
}

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
