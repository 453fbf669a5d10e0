#include "backends/cpu/onednn/precision.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "backends/cpu/onednn/parallel_for.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::onednn {

bool precision_supported(Precision precision) {
  switch (precision) {
    case Precision::kF32:
    case Precision::kF16:
    case Precision::kF8:
    case Precision::kBf16:  // where the CPU runs it: OnednnBackend::precision_refusal says where not
      return true;
    case Precision::kI8:  // int8 convolutions only (support.cpp)
      return true;
  }
  return false;
}

dnnl::memory::data_type kernel_type(Precision precision) {
  return precision == Precision::kBf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

Tensor prepare_constant(const Tensor& constant, Precision precision) {
  Tensor values = constant.dtype() == DType::kF32 ? constant.clone() : constant.to(DType::kF32);
  if (precision == Precision::kF16 || precision == Precision::kBf16) {
    float* data = values.mutable_f32().data();
    round_to_storage(data, data, values.f32().size(), precision);
  }
  return values;
}

bool reads_rounded(Precision precision) {
  return precision == Precision::kF16 || precision == Precision::kBf16;
}

bool writes_rounded(Precision precision) {
  return precision != Precision::kF32 && precision != Precision::kI8;
}

namespace {

// fp16 rounding with the F16C conversions where the CPU has them: the same IEEE round-to-nearest-even
// (subnormals, infinities and NaN included) as round_to_f16, at memory speed. Only the per-chunk kernel
// carries the target attribute: an OpenMP region outlined from an AVX function would pass AVX vectors
// across a call built without AVX, which clang rejects.
#if defined(__x86_64__) && defined(__GNUC__)
constexpr std::int64_t kF16cChunk = 4096;  // floats per OpenMP work item, a multiple of the 8-wide vector

__attribute__((target("f16c,avx"))) void round_chunk_f16c(const float* in, float* out, std::int64_t count) {
  const std::int64_t vectors = count / 8;
  for (std::int64_t v = 0; v < vectors; ++v) {
    const __m256 x = _mm256_loadu_ps(in + v * 8);
    _mm256_storeu_ps(out + v * 8, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (std::int64_t i = vectors * 8; i < count; ++i) out[i] = round_to_f16(in[i]);
}

void round_to_f16_f16c(const float* in, float* out, std::int64_t count) {
  const std::int64_t chunks = (count + kF16cChunk - 1) / kF16cChunk;
  parallel_for(chunks, true, [&](std::int64_t c) {
    const std::int64_t begin = c * kF16cChunk;
    round_chunk_f16c(in + begin, out + begin, std::min(kF16cChunk, count - begin));
  });
}

// CPUID leaf 1 names F16C (ECX bit 29) and AVX (bit 28); AVX is usable only when the OS saves the YMM
// registers (OSXSAVE, bit 27, and XCR0 bits 1 and 2). Asked of the CPU itself, as every compiler can.
bool has_f16c() {
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
    if ((ecx & (kOsxsave | kAvx | kF16c)) != (kOsxsave | kAvx | kF16c)) return false;
    unsigned xcr0_low = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    return (xcr0_low & 0x6u) == 0x6u;
  }();
  return supported;
}
#endif

void round_to_f16_portable(const float* in, float* out, std::int64_t count) {
  parallel_for(count, true, [&](std::int64_t i) { out[i] = round_to_f16(in[i]); });
}

// round_to_bf16 (core/dtype.h) over whole tensors kept in f32, vectorized.
inline float round_to_bf16_branchless(float value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bf16_bits(value)) << 16);
}

void round_to_bf16_chunks(const float* in, float* out, std::int64_t count) {
  constexpr std::int64_t kChunk = 4096;  // floats per OpenMP work item
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
  parallel_for(chunks, true, [&](std::int64_t c) {
    const std::int64_t end = std::min(count, (c + 1) * kChunk);
    for (std::int64_t i = c * kChunk; i < end; ++i) out[i] = round_to_bf16_branchless(in[i]);
  });
}

}  // namespace

void round_to_storage(const float* in, float* out, std::size_t count, Precision precision) {
  switch (precision) {
    case Precision::kF32:
    case Precision::kI8:  // int8 layers write f32
      if (in != out) std::copy(in, in + count, out);
      return;
    case Precision::kF16:
    case Precision::kF8:
#if defined(__x86_64__) && defined(__GNUC__)
      if (has_f16c()) return round_to_f16_f16c(in, out, static_cast<std::int64_t>(count));
#endif
      return round_to_f16_portable(in, out, static_cast<std::int64_t>(count));
    case Precision::kBf16:
      return round_to_bf16_chunks(in, out, static_cast<std::int64_t>(count));
  }
}

}  // namespace kiln::onednn
