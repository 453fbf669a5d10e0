// Timing a piece of device work for tactic choice: the work is captured kRepeats times into a CUDA
// graph and the graph's replays are timed with CUDA events, so host overhead (cuDNN's own is tens of
// microseconds per call) is not counted: what the network's graph replay will pay is the device time.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>

namespace kiln::cuda {

// `launch` enqueues the work on the stream and returns false if it could not (an unsupported tactic).
// Runs it once eagerly first (loads kernels, checks it works). Returns milliseconds per launch, or
// nothing when the work failed or could not be captured.
std::optional<double> time_launch(cudaStream_t stream, const std::function<bool(cudaStream_t)>& launch);

}  // namespace kiln::cuda
