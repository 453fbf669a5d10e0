#include "backends/cpu/onednn/denormals.h"

#include <omp.h>

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
  ForkJoin edges;
#pragma omp parallel num_threads(threads_)
  {
    edges.enter();
    const auto index = static_cast<std::size_t>(omp_get_thread_num());
    if (index < saved_.size()) saved_[index] = _mm_getcsr();
    _mm_setcsr(_mm_getcsr() | kFlushBits);
    edges.leave();
  }
  edges.join();
#endif
}

FlushDenormals::~FlushDenormals() {
#if KILN_HAVE_MXCSR
  ForkJoin edges;
#pragma omp parallel num_threads(threads_)
  {
    edges.enter();
    const auto index = static_cast<std::size_t>(omp_get_thread_num());
    if (index < saved_.size()) _mm_setcsr(saved_[index]);
    edges.leave();
  }
  edges.join();
#endif
}

}  // namespace kiln::onednn
