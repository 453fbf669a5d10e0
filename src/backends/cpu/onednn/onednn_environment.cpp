// What the cpu backend runs on: the oneDNN library loaded and the instruction set its kernels use.
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>

#include "backends/cpu/onednn/onednn_backend.h"
#include "core/error.h"

namespace kiln {
namespace {

// oneDNN's name for the widest instruction set it dispatches to on this CPU.
std::string_view isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "SSE4.1";
    case dnnl_cpu_isa_avx:
      return "AVX";
    case dnnl_cpu_isa_avx2:
      return "AVX2";
    case dnnl_cpu_isa_avx2_vnni:
      return "AVX2 VNNI";
    case dnnl_cpu_isa_avx512_mic:
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "AVX-512 (Xeon Phi)";
    case dnnl_cpu_isa_avx512_core:
      return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "AVX-512 VNNI";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "AVX-512 BF16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "AVX-512 with AMX";
    default:
      return "unknown";
  }
}

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
          {"onednn_isa", "oneDNN kernels' ISA", std::string(isa_name(dnnl_get_effective_cpu_isa()))},
          {"openmp_wait", "OpenMP threads waiting", openmp_wait_policy()}};
}

}  // namespace kiln
