// Where manifests live, and how a manifest argument on the command line names one.
//
// Bare family names are looked up in a families directory, by default default_families_dir(): "families"
// under the current directory (the repository root), else the one installed beside the binary
// (<prefix>/share/kiln/families) or inside the Python package; or pass the directory explicitly
// (kiln validate --families-dir).
// Nothing is compiled in, so a kiln binary never depends on where it was built.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr std::string_view kManifestFileName = "manifest.toml";
inline constexpr std::string_view kDefaultFamiliesDir = "families";

// "families" when the current directory has one; else <prefix>/share/kiln/families for the first of
// the folder holding the running program or the library this code is in (libkiln.so, the Python module)
// and its ancestors (up to four levels) that has one; else "families". The folder itself is where the
// Python wheel's package keeps its manifests (kiln/share/kiln/families).
std::filesystem::path default_families_dir();

// The running program's executable (/proc/self/exe), or empty where it cannot be read.
std::filesystem::path running_program();

// Resolves a manifest argument, first rule that applies:
//   1. an existing directory: DIR/manifest.toml, which must exist (families/timm_resnest);
//   2. an existing file: that file (families/timm_resnest/manifest.toml);
//   3. a bare family name, [A-Za-z0-9_-]+: FAMILIES_DIR/NAME/manifest.toml, which must exist.
// Fails with a kiln::Error naming the argument otherwise.
std::filesystem::path resolve_manifest_path(std::string_view argument,
                                            const std::filesystem::path& families_dir);

// Every FAMILIES_DIR/*/manifest.toml, sorted by path; folders without one (shared code) are skipped.
std::vector<std::filesystem::path> find_family_manifests(const std::filesystem::path& families_dir);

}  // namespace kiln
