// Whether what else a process holds moves a network's time: times one plan the way `kiln bench` does
// (device events around graph replays, runtime/benchmark.h) on the first engine a process makes, then
// again after making something else, to find what a second engine changes for the first.
//
//   engine_state_probe PLAN OTHER_PLAN [SECONDS] [MODE]
//
// MODE (one per process: what it changes persists):
//   engine     (default) a second engine of PLAN made after an engine of OTHER_PLAN (as `kiln study`
//              makes its variants after the fp32 reference), timed; the first again with both alive,
//              again once they are gone, and beside an idle buffer as large as they were;
//   profiling  an engine of OTHER_PLAN compiled for profiling (its libraries' handles and layers, no CUDA
//              graph), then the first again;
//   graph      a stream and a one-node CUDA graph captured, instantiated and uploaded on it, then the
//              first again;
//   stream     a stream created, then the first again;
//   cudnn      a cuDNN handle created (as each program makes one), then the first again;
//   cublaslt   a cuBLASLt handle created (likewise), then the first again.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "plan/plan_reader.h"
#include "runtime/benchmark.h"
#include "runtime/engine.h"
#include "testing/random_tensor.h"

namespace {

double median_ms(kiln::Engine& engine, const kiln::Tensor& input, double seconds) {
  kiln::BenchSettings settings;
  settings.warmup_seconds = 1.0;
  settings.duration_seconds = seconds;
  return kiln::summarize(kiln::time_engine(engine, input, settings), input.dim(0)).median_ms;
}

void require_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A stream with a one-node graph (a memset) captured, instantiated and uploaded on it; all left alive.
void make_a_graph() {
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  void* buffer = nullptr;
  require_cuda(cudaMalloc(&buffer, 1 << 20), "allocating");
  cudaGraph_t graph = nullptr;
  require_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capturing");
  require_cuda(cudaMemsetAsync(buffer, 0, 1 << 20, stream), "capturing a memset");
  require_cuda(cudaStreamEndCapture(stream, &graph), "ending the capture");
  cudaGraphExec_t exec = nullptr;
  require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiating");
  require_cuda(cudaGraphUpload(exec, stream), "uploading");
  require_cuda(cudaStreamSynchronize(stream), "uploading");
}

// The modes that make no engine: makes what `mode` names, left alive.
void make_something_else(const std::string& mode) {
  if (mode == "graph") {
    make_a_graph();
  } else if (mode == "stream") {
    cudaStream_t stream = nullptr;
    require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  } else if (mode == "cudnn") {
    cudnnHandle_t handle = nullptr;
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("creating a cuDNN handle");
  } else if (mode == "cublaslt") {
    cublasLtHandle_t handle = nullptr;
    if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("creating a cuBLASLt handle");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: engine_state_probe PLAN OTHER_PLAN [SECONDS] "
                 "[engine|profiling|graph|stream|cudnn|cublaslt]\n");
    return 2;
  }
  try {
    const double seconds = argc > 3 ? std::atof(argv[3]) : 3.0;
    const std::string mode = argc > 4 ? argv[4] : "engine";
    const std::string modes = " engine profiling graph stream cudnn cublaslt ";
    if (mode.empty() || modes.find(" " + mode + " ") == std::string::npos)
      throw std::runtime_error("unknown mode '" + mode +
                               "' (engine, profiling, graph, stream, cudnn, cublaslt)");
    const auto plan = std::make_shared<const kiln::Plan>(kiln::read_plan(argv[1]));
    const auto other = std::make_shared<const kiln::Plan>(kiln::read_plan(argv[2]));
    kiln::CompileOptions options;
    options.batch = plan->info.batch;
    kiln::CompileOptions other_options = options;
    other_options.batch = other->info.batch;
    const std::int64_t size = plan->config.preprocess.input_size;
    const kiln::Tensor input = kiln::testing::random_tensor({options.batch, 3, size, size}, 7);
    kiln::Engine alone(plan, "cuda", options);
    std::printf("alone (as kiln bench):            %.4f ms\n", median_ms(alone, input, seconds));
    if (mode == "profiling") {
      other_options.profile = true;
      kiln::Engine profiling(other, "cuda", other_options);
      std::printf("after a profiling engine:         %.4f ms\n", median_ms(alone, input, seconds));
      return 0;
    }
    if (mode != "engine") {
      make_something_else(mode);
      std::printf("after a %s:                  %.4f ms\n", mode.c_str(), median_ms(alone, input, seconds));
      return 0;
    }
    std::size_t free_before = 0, total = 0, free_after = 0;
    cudaMemGetInfo(&free_before, &total);
    {
      kiln::Engine first(other, "cuda", other_options);
      kiln::Engine second(plan, "cuda", options);
      cudaMemGetInfo(&free_after, &total);
      std::printf("made after OTHER_PLAN's engine:   %.4f ms\n", median_ms(second, input, seconds));
      std::printf("the first again, all three alive: %.4f ms\n", median_ms(alone, input, seconds));
    }
    std::printf("the first again, the others gone: %.4f ms\n", median_ms(alone, input, seconds));
    const std::size_t held = free_before - free_after;
    void* idle = nullptr;
    require_cuda(cudaMalloc(&idle, held), "allocating the idle buffer");
    std::printf("beside an idle %zu MB buffer:   %.4f ms\n", held >> 20, median_ms(alone, input, seconds));
    cudaFree(idle);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_state_probe: %s\n", e.what());
    return 1;
  }
}
