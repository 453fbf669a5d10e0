// oneDNN as Debian builds it threads through OpenMP and sizes its work split by the calling thread's
// OpenMP thread count, both when a primitive is created and when it runs; this sets that count for a
// scope and restores it afterwards.
#pragma once

#include <omp.h>

namespace kiln::onednn {

// The team OpenMP starts with: OMP_NUM_THREADS where it is set (by the user, or by kiln's choice when the
// process started, src/sdk/wait_choice.h: the cores other work leaves free), else one per core. Read
// once, before any scope has changed it.
inline int default_threads() {
  static const int threads = omp_get_max_threads();
  return threads;
}

class ThreadScope {
 public:
  // threads == 0: default_threads().
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads > 0 ? threads : default_threads());
  }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace kiln::onednn
