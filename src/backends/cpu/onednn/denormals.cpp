#include "backends/cpu/onednn/denormals.h"

#include "backends/cpu/onednn/parallel_for.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define KILN_HAVE_MXCSR 1
#endif

namespace kiln::onednn {
namespace {

#if KILN_HAVE_MXCSR
constexpr unsigned kFlushBits = 0x8040;  // MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6)
#endif

}  // namespace

FlushDenormals::FlushDenormals(int threads)
    : threads_(threads), saved_(static_cast<std::size_t>(threads), 0) {
#if KILN_HAVE_MXCSR
  on_each_thread(threads_, [this](int thread) {
    const auto index = static_cast<std::size_t>(thread);
    if (index < saved_.size()) saved_[index] = _mm_getcsr();
    _mm_setcsr(_mm_getcsr() | kFlushBits);
  });
#endif
}

FlushDenormals::~FlushDenormals() {
#if KILN_HAVE_MXCSR
  on_each_thread(threads_, [this](int thread) {
    const auto index = static_cast<std::size_t>(thread);
    if (index < saved_.size()) _mm_setcsr(saved_[index]);
  });
#endif
}

}  // namespace kiln::onednn
