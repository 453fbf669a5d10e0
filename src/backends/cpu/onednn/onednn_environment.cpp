// What the cpu backend runs on: the oneDNN library loaded and the instruction set its kernels use.
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>

#include "backends/cpu/onednn/onednn_backend.h"
#include "backends/cpu/onednn/onednn_isa.h"
#include "core/error.h"

namespace kiln {
namespace {

// How idle OpenMP threads wait. kiln's program and libkiln.so choose at start (src/sdk/wait_policy.h)
// and say what and why; the choice is found by name, for programs that link this backend without that
// library (tests, benchmarks) have none, and there libgomp's default holds unless the variable is set.
std::string openmp_wait_policy() {
  using ChoiceText = const char* (*)();
  if (const auto chosen = reinterpret_cast<ChoiceText>(dlsym(RTLD_DEFAULT, "kiln_wait_choice"))) {
    if (const char* text = chosen(); text != nullptr && *text != '\0') return text;
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (policy == nullptr || *policy == '\0')
    return "spin, then sleep (OMP_WAIT_POLICY unset; passive suits a CPU shared with other work)";
  return cat("OMP_WAIT_POLICY=", policy);
}

}  // namespace

std::vector<BackendFact> OnednnBackend::environment() const {
  const dnnl_version_t* version = dnnl_version();
  std::string text = cat(version->major, ".", version->minor, ".", version->patch);
  const std::string_view hash = version->hash != nullptr ? version->hash : "";
  if (!hash.empty() && hash != "N/A") text += cat(" (", hash.substr(0, 12), ")");
  return {{"onednn", "oneDNN", text},
          {"onednn_isa", "oneDNN kernels' ISA", std::string(onednn::isa_name())},
          {"bf16", "bf16 layers",
           onednn::runs_bf16() ? "native (oneDNN's bf16 kernels, f32 accumulation)"
                               : "not run here (no AVX512-BF16 or AMX-BF16)"},
          {"int8", "int8 layers",
           onednn::runs_int8() ? "native (oneDNN's int8 kernels, s32 accumulation)"
                               : "simulated in f32 (no AVX512-VNNI, AVX-VNNI or AMX)"},
          {"openmp_wait", "OpenMP threads waiting", openmp_wait_policy(), true}};
}

}  // namespace kiln
