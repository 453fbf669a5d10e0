// kiln_get_api, the function table, the error objects and the backends offered here.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/backend_plugin.h"
#include "sdk/c_api_internal.h"

namespace kiln::capi {

namespace {

// What report() hands out when even the error object cannot be allocated.
kiln_error out_of_memory{KILN_STATUS_OUT_OF_MEMORY, "out of memory"};

const char* version() { return KILN_VERSION; }

kiln_status error_status(const kiln_error* error) { return error == nullptr ? KILN_OK : error->status; }

const char* error_message(const kiln_error* error) { return error == nullptr ? "" : error->message.c_str(); }

void error_free(kiln_error* error) {
  if (error != &out_of_memory) delete error;
}

const char* backend_at(size_t index) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const std::string_view name : backend_names()) all.emplace_back(name);
    return all;
  }();
  return index < names.size() ? names[index].c_str() : nullptr;
}

// A plugin's line is read once: loading it again would not change it within a process.
const char* backend_status(const char* backend) noexcept {
  if (backend == nullptr) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, std::string, std::less<>> lines;
  try {
    const std::lock_guard lock(mutex);
    if (const auto found = lines.find(std::string_view(backend)); found != lines.end()) return found->second.c_str();
    std::string line;
    if (is_plugin_backend(backend)) {
      line = plugin_status(backend);
    } else {
      for (std::size_t i = 0; backend_at(i) != nullptr; ++i)
        if (std::string_view(backend_at(i)) == backend) line = "built in";
      if (line.empty()) return nullptr;
    }
    return lines.emplace(backend, std::move(line)).first->second.c_str();
  } catch (...) {
    return nullptr;
  }
}

kiln_api make_table() {
  kiln_api api{};
  api.struct_size = sizeof(kiln_api);
  api.version = version;
  api.error_status = error_status;
  api.error_message = error_message;
  api.error_free = error_free;
  add_plan_and_engine_entries(api);
  add_task_entries(api);
  add_image_run_entries(api);
  api.backend_at = backend_at;
  api.backend_status = backend_status;
  return api;
}

}  // namespace

kiln_status report(kiln_error** error, kiln_status status, const char* message) noexcept {
  if (error == nullptr) return status;
  try {
    *error = new kiln_error{status, message};
  } catch (...) {
    *error = &out_of_memory;
  }
  return status;
}

}  // namespace kiln::capi

extern "C" KILN_API kiln_status kiln_get_api(uint32_t major, uint32_t minor, const kiln_api** api) {
  if (api == nullptr) return KILN_STATUS_INVALID_ARGUMENT;
  *api = nullptr;
  if (major != KILN_ABI_MAJOR || minor > KILN_ABI_MINOR) return KILN_STATUS_UNSUPPORTED;
  static const kiln_api table = kiln::capi::make_table();
  *api = &table;
  return KILN_OK;
}

extern "C" KILN_API const char* kiln_status_name(kiln_status status) {
  switch (status) {
    case KILN_OK:
      return "KILN_OK";
    case KILN_STATUS_INVALID_ARGUMENT:
      return "KILN_STATUS_INVALID_ARGUMENT";
    case KILN_STATUS_NOT_FOUND:
      return "KILN_STATUS_NOT_FOUND";
    case KILN_STATUS_UNSUPPORTED:
      return "KILN_STATUS_UNSUPPORTED";
    case KILN_STATUS_FAILED:
      return "KILN_STATUS_FAILED";
    case KILN_STATUS_OUT_OF_MEMORY:
      return "KILN_STATUS_OUT_OF_MEMORY";
    case KILN_STATUS_INTERNAL:
      return "KILN_STATUS_INTERNAL";
  }
  return "KILN_STATUS_UNKNOWN";
}
