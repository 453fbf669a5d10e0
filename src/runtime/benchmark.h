// Timing an engine the way trtexec does: warm up for a time, then run for a time, keep every latency,
// and report order statistics; optionally a per-layer profile grouped as kernel-time studies group it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace kiln {

struct BenchSettings {
  double warmup_seconds = 1.0;
  double duration_seconds = 5.0;
  int min_iterations = 10;
  // Time Engine::run on the host clock (input and output copies included) even where the device's
  // graph replays could be timed: the end-to-end figure beside the device one.
  bool host_clock = false;
};

// What the timed region measured: one latency per sample, and the runs and wall time of them all.
struct TimedRuns {
  std::vector<double> milliseconds;  // per sample: one run (host) or the mean of kReplaysPerSample replays
  std::int64_t runs = 0;             // network runs timed: samples (host) or samples x replays (device)
  double wall_seconds = 0;           // host wall time from the first timed run's start to the last's end
};

struct LatencyStats {
  int iterations = 0;  // samples
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, p90_ms = 0, p99_ms = 0, stddev_ms = 0;
  std::int64_t runs = 0;
  double wall_seconds = 0;
  // Images over the wall time of the timed runs (runs x batch / wall seconds), as trtexec counts
  // throughput: gaps between runs count, unlike in batch / median latency.
  double images_per_second = 0;
};

// Host backends: the timed region is Engine::run on a prepared input, host wall clock around each call
// (CPU backends run synchronously, so the clock covers the whole computation).
// Device backends (cuda): after one run on `input`, the timed region is the device's work alone:
// device events around kReplaysPerSample back-to-back replays of the network's CUDA graph, input
// already on the device (the peers are timed the same way); one sample is their mean.
TimedRuns time_engine(Engine& engine, const Tensor& input, const BenchSettings& settings);
inline constexpr int kReplaysPerSample = 20;
// "host clock around run()" or "device events around graph replays", as time_engine times `engine` with
// `settings`.
std::string timed_region(Engine& engine, const BenchSettings& settings = {});
LatencyStats summarize(const TimedRuns& timed, std::int64_t batch);

// The kernel-time group of an operator (one of kLayerGroups; its row in graph/op_info.h says which).
std::string layer_group(OpKind op);

struct LayerProfile {
  std::vector<LayerTime> layers;           // mean time per layer over the profiled runs
  std::map<std::string, double> group_ms;  // per group
  double total_ms = 0;
};

// Runs `iterations` profiled runs (the engine must be compiled with profile = true).
LayerProfile profile_engine(Engine& engine, const Tensor& input, int iterations);

}  // namespace kiln
