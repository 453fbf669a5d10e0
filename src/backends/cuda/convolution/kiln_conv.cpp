#include "backends/cuda/convolution/kiln_conv.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

bool KilnConv::restore(const TacticRecord& stored) {
  if (!runs(stored.algorithm)) return false;
  variant_ = stored.algorithm;
  return true;
}

void KilnConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void*, std::size_t) {
  for (const int v : variants()) {
    if (!runs(v)) continue;
    if (!race.offer({v, 0}, [&](cudaStream_t s) { return launch(buffers, v, s) == cudaSuccess; })) return;
  }
}

void KilnConv::enqueue(const ConvBuffers& buffers, void*, cudaStream_t stream) const {
  check(launch(buffers, variant_, stream), cat("running ", what_, " ", key_));
}

}  // namespace kiln::cuda
