// The C API's handles and the guard every entry point runs its body in: C++ exceptions become a status
// and an error object here, so none crosses into C.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "sdk/classify.h"
#include "sdk/detect.h"
#include "sdk/sdk_engine.h"

struct kiln_error {
  kiln_status status;
  std::string message;
};
struct kiln_plan {
  std::shared_ptr<const kiln::Plan> plan;
  std::string name;  // the file, or the name given with the bytes: what messages call the plan
};
struct kiln_engine {
  std::shared_ptr<const kiln::embed::SdkEngine> engine;
  std::vector<std::string> names;  // inputs, then outputs: the C strings tensor infos point into
};
struct kiln_context {
  kiln::embed::SdkContext context;
};
struct kiln_classifications {
  std::vector<kiln::embed::ClassScore> scores;
  std::vector<kiln_class_score> entries;
};
struct kiln_detector {
  kiln::embed::SdkDetector detector;
};
struct kiln_detections {
  std::vector<kiln::embed::NamedDetection> found;
  std::vector<kiln_detection> entries;
};

namespace kiln::capi {

// Stores `status` and `message` in *error (when the caller asked for one) and returns the status.
kiln_status report(kiln_error** error, kiln_status status, const char* message) noexcept;

template <typename Body>
kiln_status guard(kiln_error** error, Body&& body) noexcept {
  if (error != nullptr) *error = nullptr;
  try {
    body();
    return KILN_OK;
  } catch (const embed::InvalidArgument& e) {
    return report(error, KILN_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const embed::Unsupported& e) {
    return report(error, KILN_STATUS_UNSUPPORTED, e.what());
  } catch (const embed::NotFound& e) {
    return report(error, KILN_STATUS_NOT_FOUND, e.what());
  } catch (const Error& e) {
    return report(error, KILN_STATUS_FAILED, e.what());
  } catch (const std::bad_alloc&) {
    return report(error, KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return report(error, KILN_STATUS_INTERNAL, (std::string("internal: ") + e.what()).c_str());
  } catch (...) {
    return report(error, KILN_STATUS_INTERNAL, "internal: an unknown exception");
  }
}

// Fails with InvalidArgument naming `what` when `pointer` is NULL.
template <typename T>
T& checked(T* pointer, const char* what) {
  if (pointer == nullptr) throw embed::InvalidArgument(cat(what, " is NULL"));
  return *pointer;
}

// A string argument, which must not be NULL.
inline const char* checked_text(const char* text, const char* what) {
  if (text == nullptr) throw embed::InvalidArgument(cat(what, " is NULL"));
  return text;
}

// An option struct as the caller filled it: the first struct_size bytes over `defaults` (NULL: the
// defaults), so that callers built against an older, shorter struct keep working.
template <typename Options>
Options defaults_of() {
  Options options{};
  options.struct_size = sizeof(Options);
  return options;
}

template <typename Options>
Options read_options(const Options* given, Options defaults, const char* what) {
  if (given == nullptr) return defaults;
  if (given->struct_size < sizeof(std::size_t)) {
    throw embed::InvalidArgument(
        cat(what, ": struct_size ", given->struct_size, " is smaller than the field itself"));
  }
  std::memcpy(static_cast<void*>(&defaults), given, std::min(given->struct_size, sizeof(Options)));
  return defaults;
}

embed::EngineSettings engine_settings(const kiln_engine_options* options);
// A kiln_image argument as RGB; `name` stands for it in messages.
Image image_argument(const kiln_image* image, const std::string& name = "image");
// The caller's tensors, dtype and shape pointer checked; `role` is "input" or "output".
std::vector<embed::BufferView> buffer_views(const kiln_tensor* tensors, size_t count, const char* role);

// Each file of the C API sets its entries of the function table.
void add_plan_and_engine_entries(kiln_api& api);
void add_task_entries(kiln_api& api);
void add_image_run_entries(kiln_api& api);

}  // namespace kiln::capi
