// The backends kiln offers: the CPU backends built into libkiln_core.so, and the plugins installed here.
#include "backends/backend.h"
#include "backends/cpu/reference/reference_backend.h"
#include "core/error.h"
#include "runtime/backend_plugin.h"
#if KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/onednn_backend.h"
#endif

namespace kiln {

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
#if KILN_HAVE_ONEDNN
  names.push_back("cpu");
#endif
  names.push_back("cpu-reference");
  // Plugins come last: a plan runs on the CPU unless asked.
  for (const std::string_view plugin : plugin_backend_names())
    if (plugin_installed(plugin)) names.push_back(plugin);
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
#if KILN_HAVE_ONEDNN
  if (name == "cpu") return std::make_unique<OnednnBackend>();
#endif
  if (name == "cpu-reference") return std::make_unique<ReferenceBackend>();
  if (plugin_installed(name)) return make_plugin_backend(name);
  std::string known;
  for (const auto candidate : backend_names()) known += cat(known.empty() ? "" : ", ", candidate);
  if (!is_plugin_backend(name)) fail("unknown backend '", name, "' (built in: ", known, ")");
  const std::filesystem::path plugin = plugin_path(name);
  fail("unknown backend '", name, "' (built in: ", known, "; the ", name, " backend is the plugin ",
       plugin.filename().string(), ", which is not in ", plugin.parent_path().string(), ")");
}

}  // namespace kiln
