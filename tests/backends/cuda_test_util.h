// Whether the CUDA backend is built into this binary and a device is present, for tests that skip
// (GTEST_SKIP, reported as skipped, not passed) where there is none.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "backends/backend.h"

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kiln::testing {

inline bool cuda_built() {
  const auto names = backend_names();
  return std::find(names.begin(), names.end(), "cuda") != names.end();
}

inline bool gpu_present() {
#if KILN_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

}  // namespace kiln::testing

#define KILN_SKIP_WITHOUT_GPU()                                                                           \
  if (!::kiln::testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)"; \
  if (!::kiln::testing::gpu_present()) GTEST_SKIP() << "no CUDA device on this machine"
