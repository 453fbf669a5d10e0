#include "backends/cpu/onednn/onednn_isa.h"

#include <oneapi/dnnl/dnnl.h>

namespace kiln::onednn {

std::string_view isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
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

bool runs_bf16() {
  // oneDNN's ISA levels are bit sets, each holding the bits of the levels it extends; AMX's holds BF16's.
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}

bool runs_int8() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto has = [&](dnnl_cpu_isa_t level) {
    return (isa & static_cast<unsigned>(level)) == static_cast<unsigned>(level);
  };
  return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
}

}  // namespace kiln::onednn
