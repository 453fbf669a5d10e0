#include "backends/cuda/tactics/tactic.h"

#include "backends/cuda/tactics/timing.h"

namespace kiln::cuda {

std::optional<double> try_candidate(bool search, cudaStream_t stream, const Launch& launch) {
  if (search) return time_launch(stream, launch);
  if (!launch(stream) || cudaStreamSynchronize(stream) != cudaSuccess) {
    cudaGetLastError();  // a refused launch leaves no error behind for the next candidate
    return std::nullopt;
  }
  return 0.0;
}

}  // namespace kiln::cuda
