// Flush-to-zero and denormals-are-zero for the duration of a run, on the calling thread and the OpenMP
// threads oneDNN runs on. x86 cores handle subnormal floats in microcode, tens of times slower than
// normal ones, and split attention makes them: a softmax across the radix underflows for logits far
// apart, and the weighted sum carries those weights into the next convolution, which then runs
// markedly slower. Flushing changes only values below 2^-126 (about 1.2e-38).
#pragma once

#include <vector>

namespace kiln::onednn {

class FlushDenormals {
 public:
  // `threads`: the OpenMP team size the run's primitives use.
  explicit FlushDenormals(int threads);
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  int threads_;
  std::vector<unsigned> saved_;  // each team thread's control register, restored afterwards
};

}  // namespace kiln::onednn
