// Whether the CUDA backend (its plugin) is installed beside this build and a device is present, for tests
// that skip (GTEST_SKIP, reported as skipped, not passed) where there is none.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "backends/backend.h"
#include "backends/device.h"

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kiln::testing {

inline bool cuda_built() {
  const auto names = backend_names();
  return std::find(names.begin(), names.end(), "cuda") != names.end();
}

// Asked of the backend's device, so that programs not linking the plugin see the GPU it would run on.
inline bool gpu_present() {
  if (!cuda_built()) return false;
  const Device* device = make_backend("cuda")->device();
  return device != nullptr && device->count() > 0;
}

}  // namespace kiln::testing

#define KILN_SKIP_WITHOUT_GPU()                                                                           \
  if (!::kiln::testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)"; \
  if (!::kiln::testing::gpu_present()) GTEST_SKIP() << "no CUDA device on this machine"
