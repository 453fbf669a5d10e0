// Whether what else a process holds moves a network's time: times one plan the way `kiln bench` does
// (device events around graph replays, runtime/benchmark.h) on engines made in three states: alone, as
// `kiln bench` makes it; a second engine of the plan made after an engine of OTHER_PLAN (as `kiln study`
// makes its variants after the fp32 reference); the first engine again with both others alive; again
// once they are gone; and beside an idle device buffer as large as the other engines' memory was.
// Prints one line per state with the median.
//
//   engine_state_probe PLAN OTHER_PLAN [SECONDS]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: engine_state_probe PLAN OTHER_PLAN [SECONDS]\n");
    return 2;
  }
  try {
    const double seconds = argc > 3 ? std::atof(argv[3]) : 3.0;
    const auto plan = std::make_shared<const kiln::Plan>(kiln::read_plan(argv[1]));
    const auto other = std::make_shared<const kiln::Plan>(kiln::read_plan(argv[2]));
    kiln::CompileOptions options;
    options.batch = plan->info.batch;
    const std::int64_t size = plan->config.preprocess.input_size;
    const kiln::Tensor input = kiln::testing::random_tensor({options.batch, 3, size, size}, 7);
    kiln::Engine alone(plan, "cuda", options);
    std::printf("alone (as kiln bench):            %.4f ms\n", median_ms(alone, input, seconds));
    kiln::CompileOptions other_options = options;
    other_options.batch = other->info.batch;
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
    if (cudaMalloc(&idle, held) != cudaSuccess) return 1;
    std::printf("beside an idle %zu MB buffer:   %.4f ms\n", held >> 20, median_ms(alone, input, seconds));
    cudaFree(idle);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_state_probe: %s\n", e.what());
    return 1;
  }
}
