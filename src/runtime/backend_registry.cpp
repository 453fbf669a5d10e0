// The list of backends built into kiln.
#include "backends/cpu/reference_backend.h"
#include "core/error.h"
#include "runtime/backend.h"

namespace kiln {

std::vector<std::string_view> backend_names() { return {"cpu-reference"}; }

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu-reference") return std::make_unique<ReferenceBackend>();
  std::string known;
  for (const auto candidate : backend_names()) known += cat(known.empty() ? "" : ", ", candidate);
  fail("unknown backend '", name, "' (built in: ", known, ")");
}

}  // namespace kiln
