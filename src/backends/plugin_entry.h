// What a backend built as a plugin library (libkiln_cuda.so) exports, and how kiln finds it: two C
// functions, looked up by name when the library is loaded (runtime/backend_plugin.h). A plugin shares
// kiln's classes through libkiln_core.so, so it must come from the same build as the core it is loaded
// into: the loader compares their build strings before it makes a backend.
#pragma once

namespace kiln {
class Backend;
}

extern "C" {
// The build the plugin was compiled in: "VERSION (commit COMMIT)", as kiln --version prints it.
using KilnPluginBuildFunction = const char* (*)();
// A new backend, owned by the caller. Making one touches no device: a missing GPU is reported when the
// backend compiles or is asked for its device.
using KilnPluginMakeFunction = kiln::Backend* (*)();
}

namespace kiln {

inline constexpr const char* kPluginBuildSymbol = "kiln_plugin_build";
inline constexpr const char* kPluginMakeSymbol = "kiln_plugin_make_backend";

}  // namespace kiln
