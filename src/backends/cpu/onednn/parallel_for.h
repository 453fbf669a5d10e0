// kiln's own loops on the oneDNN backend share OpenMP's team with oneDNN. parallel_for(count, parallel,
// body) runs body(i) for every i in [0, count): across the team when `parallel`, else on the calling thread.
//
// Debian's libgomp is not built with ThreadSanitizer, so under it an OpenMP region's fork (the workers
// start after the calling thread's writes) and join (the caller goes on after the workers' writes) are
// invisible: every worker access to the caller's data reads as a race, and each such report, suppressed
// or not, costs a symbolized stack (a one-second test then runs for hours). ForkJoin states both edges
// to ThreadSanitizer and compiles to nothing in every other build. It gives the workers of one region no
// edge between them, so a race between two of them is still reported.
#pragma once

#include <omp.h>

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define KILN_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_THREAD_SANITIZER 1
#endif
#endif

#if KILN_THREAD_SANITIZER
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace kiln::onednn {

class ForkJoin {
 public:
  ForkJoin() { release(&fork_); }    // the calling thread, before the region
  void enter() { acquire(&fork_); }  // each team thread, before its share
  void leave() { release(&join_); }  // each team thread, after its share
  void join() { acquire(&join_); }   // the calling thread, after the region

 private:
  static void release([[maybe_unused]] char* edge) {
#if KILN_THREAD_SANITIZER
    __tsan_release(edge);
#endif
  }
  static void acquire([[maybe_unused]] char* edge) {
#if KILN_THREAD_SANITIZER
    __tsan_acquire(edge);
#endif
  }
  char fork_ = 0;
  char join_ = 0;
};

template <class Body>
void parallel_for(std::int64_t count, bool parallel, const Body& body) {
  ForkJoin edges;
#pragma omp parallel if (parallel)
  {
    edges.enter();
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) body(i);
    edges.leave();
  }
  edges.join();
}

// body(thread index) once on each thread of a team of `threads` (per-thread state such as control registers).
template <class Body>
void on_each_thread(int threads, const Body& body) {
  ForkJoin edges;
#pragma omp parallel num_threads(threads)
  {
    edges.enter();
    body(omp_get_thread_num());
    edges.leave();
  }
  edges.join();
}

}  // namespace kiln::onednn
