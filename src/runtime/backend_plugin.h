// Backends built as plugin libraries (the cuda backend: libkiln_cuda.so), so that nothing else links
// their vendor libraries and kiln starts on machines without them. A plugin sits beside libkiln_core.so
// (the build folder's lib/, an install's lib/, a wheel's package folder) and is loaded on first use.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"

namespace kiln {

// The backends kiln knows as plugins, whether or not they are installed here.
std::vector<std::string_view> plugin_backend_names();
bool is_plugin_backend(std::string_view backend);

// Where `backend`'s plugin library is looked for, and whether it is there.
std::filesystem::path plugin_path(std::string_view backend);
bool plugin_installed(std::string_view backend);

// A new backend from the plugin, loading it on the first call. Fails with one line naming the library
// and why: not installed here, a library it needs missing (dlopen's words: "libcudart.so.13: cannot open
// shared object file"), or a plugin from another kiln build.
std::unique_ptr<Backend> make_plugin_backend(std::string_view backend);

// One line on `backend`'s plugin for `kiln --version`: the library it was loaded from and what it runs on
// (Backend::environment), or why it is not available here.
std::string plugin_status(std::string_view backend);

}  // namespace kiln
