#include "runtime/backend_plugin.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "backends/plugin_entry.h"
#include "core/build_info.h"

namespace kiln {
namespace {

struct PluginLibrary {
  std::string_view backend;
  std::string_view stem;  // lib<stem>.so.MAJOR.MINOR
};

constexpr PluginLibrary kPlugins[] = {{"cuda", "kiln_cuda"}};

const PluginLibrary* find_plugin(std::string_view backend) {
  for (const PluginLibrary& plugin : kPlugins)
    if (plugin.backend == backend) return &plugin;
  return nullptr;
}

// The folder of the library holding this code (libkiln_core.so), or of the program that links it
// statically.
std::filesystem::path core_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&core_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::filesystem::path(info.dli_fname).parent_path() : file.parent_path();
}

// What loading a plugin gave: its maker, or the one line saying why there is none. Loaded once per
// process and never unloaded (vendor libraries keep threads and handlers of their own).
struct LoadedPlugin {
  KilnPluginMakeFunction make = nullptr;
  std::string refusal;
};

LoadedPlugin load(std::string_view backend) {
  const std::filesystem::path path = plugin_path(backend);
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    return {nullptr, cat("the ", backend, " backend is not installed here: its plugin ", path.filename().string(),
                         " is not in ", path.parent_path().string(), " (beside libkiln_core.so)")};
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return {nullptr, cat("the ", backend, " backend cannot be loaded from ", path.string(), ": ",
                         why != nullptr ? why : "dlopen failed")};
  }
  const auto build = reinterpret_cast<KilnPluginBuildFunction>(dlsym(library, kPluginBuildSymbol));
  const auto make = reinterpret_cast<KilnPluginMakeFunction>(dlsym(library, kPluginMakeSymbol));
  if (build == nullptr || make == nullptr)
    return {nullptr, cat(path.string(), " is not a kiln backend plugin (it lacks ", kPluginBuildSymbol, " or ",
                         kPluginMakeSymbol, ")")};
  const std::string core_build = cat(kiln_version(), " (commit ", kiln_commit(), ")");
  if (core_build != build())
    return {nullptr, cat(path.string(), " was built with kiln ", build(), ", not with this kiln ", core_build,
                         ": install the plugin of the same build")};
  return {make, {}};
}

const LoadedPlugin& loaded(std::string_view backend) {
  static std::mutex mutex;
  static std::map<std::string, LoadedPlugin, std::less<>> plugins;
  const std::lock_guard lock(mutex);
  auto found = plugins.find(backend);
  if (found == plugins.end()) found = plugins.emplace(std::string(backend), load(backend)).first;
  return found->second;
}

}  // namespace

std::vector<std::string_view> plugin_backend_names() {
  std::vector<std::string_view> names;
  for (const PluginLibrary& plugin : kPlugins) names.push_back(plugin.backend);
  return names;
}

bool is_plugin_backend(std::string_view backend) { return find_plugin(backend) != nullptr; }

std::filesystem::path plugin_path(std::string_view backend) {
  const PluginLibrary* plugin = find_plugin(backend);
  require(plugin != nullptr, "'", backend, "' is not a plugin backend");
  return core_folder() / cat("lib", plugin->stem, ".so.", KILN_PLUGIN_SOVERSION);
}

bool plugin_installed(std::string_view backend) {
  std::error_code error;
  return is_plugin_backend(backend) && std::filesystem::exists(plugin_path(backend), error);
}

std::unique_ptr<Backend> make_plugin_backend(std::string_view backend) {
  const LoadedPlugin& plugin = loaded(backend);
  if (plugin.make == nullptr) throw Error(plugin.refusal);
  return std::unique_ptr<Backend>(plugin.make());
}

std::string plugin_status(std::string_view backend) {
  const LoadedPlugin& plugin = loaded(backend);
  if (plugin.make == nullptr) return plugin.refusal;
  std::string line = cat("loaded from ", plugin_path(backend).string());
  for (const BackendFact& fact : make_plugin_backend(backend)->environment())
    line += cat("; ", fact.label, ": ", fact.value);
  return line;
}

}  // namespace kiln
