#include "backends/cuda/tactics/timing.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {
namespace {

constexpr int kLaunchesPerGraph = 10;
constexpr int kTimedReplays = 3;

}  // namespace

std::optional<double> time_launch(cudaStream_t stream, const std::function<bool(cudaStream_t)>& launch) {
  if (!launch(stream) || cudaStreamSynchronize(stream) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return std::nullopt;
  bool ok = true;
  for (int i = 0; i < kLaunchesPerGraph && ok; ++i) ok = launch(stream);
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  cudaGetLastError();
  if (!ok || ended != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return std::nullopt;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  EventPair events;
  std::vector<double> samples;
  check(cudaGraphLaunch(exec, stream), "replaying a tactic");  // warm-up
  for (int i = 0; i < kTimedReplays; ++i) {
    events.start(stream);
    check(cudaGraphLaunch(exec, stream), "replaying a tactic");
    events.stop(stream);
    samples.push_back(events.milliseconds() / kLaunchesPerGraph);
  }
  cudaGraphExecDestroy(exec);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace kiln::cuda
