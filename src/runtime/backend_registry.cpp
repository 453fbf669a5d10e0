// The list of backends built into kiln.
#include "backends/cpu/reference_backend.h"
#include "core/error.h"
#include "runtime/backend.h"
#if KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/onednn_backend.h"
#endif

namespace kiln {

std::vector<std::string_view> backend_names() {
#if KILN_HAVE_ONEDNN
  return {"cpu", "cpu-reference"};
#else
  return {"cpu-reference"};
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
#if KILN_HAVE_ONEDNN
  if (name == "cpu") return std::make_unique<OnednnBackend>();
#endif
  if (name == "cpu-reference") return std::make_unique<ReferenceBackend>();
  std::string known;
  for (const auto candidate : backend_names()) known += cat(known.empty() ? "" : ", ", candidate);
  fail("unknown backend '", name, "' (built in: ", known, ")");
}

}  // namespace kiln
