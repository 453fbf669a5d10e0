// The list of backends built into kiln.
#include "backends/cpu/reference/reference_backend.h"
#include "core/error.h"
#include "backends/backend.h"
#if KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/onednn_backend.h"
#endif
#if KILN_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace kiln {

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
#if KILN_HAVE_ONEDNN
  names.push_back("cpu");
#endif
  names.push_back("cpu-reference");
#if KILN_HAVE_CUDA
  names.push_back("cuda");  // never the default: a plan runs on the CPU unless asked
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
#if KILN_HAVE_ONEDNN
  if (name == "cpu") return std::make_unique<OnednnBackend>();
#endif
  if (name == "cpu-reference") return std::make_unique<ReferenceBackend>();
#if KILN_HAVE_CUDA
  if (name == "cuda") return std::make_unique<CudaBackend>();
#endif
  std::string known;
  for (const auto candidate : backend_names()) known += cat(known.empty() ? "" : ", ", candidate);
  fail("unknown backend '", name, "' (built in: ", known, ")");
}

}  // namespace kiln
