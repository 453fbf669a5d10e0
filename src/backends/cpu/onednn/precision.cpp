#include "backends/cpu/onednn/precision.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/dtype.h"
#include "core/error.h"

namespace kiln::onednn {

bool precision_supported(Precision precision) {
  switch (precision) {
    case Precision::kF32:
    case Precision::kF16:
    case Precision::kF8:
      return true;
  }
  return false;
}

Tensor prepare_constant(const Tensor& constant, Precision precision) {
  Tensor values = constant.dtype() == DType::kF32 ? constant.clone() : constant.to(DType::kF32);
  if (precision == Precision::kF16) {
    float* data = values.mutable_f32().data();
    round_to_storage(data, data, values.f32().size(), precision);
  }
  return values;
}

bool reads_rounded(Precision precision) { return precision == Precision::kF16; }

bool writes_rounded(Precision precision) { return precision != Precision::kF32; }

namespace {

// fp16 rounding with the F16C conversions where the CPU has them: the same IEEE round-to-nearest-even
// (subnormals, infinities and NaN included) as round_to_f16, at memory speed.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("f16c,avx"))) void round_to_f16_f16c(const float* in, float* out, std::int64_t count) {
  const std::int64_t vectors = count / 8;
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < vectors; ++v) {
    const __m256 x = _mm256_loadu_ps(in + v * 8);
    _mm256_storeu_ps(out + v * 8, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (std::int64_t i = vectors * 8; i < count; ++i) out[i] = round_to_f16(in[i]);
}

bool has_f16c() {
  static const bool supported = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return supported;
}
#endif

void round_to_f16_portable(const float* in, float* out, std::int64_t count) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) out[i] = round_to_f16(in[i]);
}

}  // namespace

void round_to_storage(const float* in, float* out, std::size_t count, Precision precision) {
  switch (precision) {
    case Precision::kF32:
      if (in != out) std::copy(in, in + count, out);
      return;
    case Precision::kF16:
    case Precision::kF8:
#if defined(__x86_64__) && defined(__GNUC__)
      if (has_f16c()) return round_to_f16_f16c(in, out, static_cast<std::int64_t>(count));
#endif
      return round_to_f16_portable(in, out, static_cast<std::int64_t>(count));
  }
}

}  // namespace kiln::onednn
