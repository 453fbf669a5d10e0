// kiln_get_api, the function table and the error objects.
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
