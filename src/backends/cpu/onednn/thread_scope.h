// oneDNN as Debian builds it threads through OpenMP and sizes its work split by the calling thread's
// OpenMP thread count, both when a primitive is created and when it runs; this sets that count for a
// scope and restores it afterwards.
#pragma once

#include <omp.h>

namespace kiln::onednn {

class ThreadScope {
 public:
  // threads == 0: one per core.
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
  }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace kiln::onednn
