#include "runtime/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

double elapsed_seconds(Clock::time_point since) { return elapsed_ms(since) / 1000.0; }

// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double fraction) {
  const auto rank = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::string timed_region(Engine& engine, const BenchSettings& settings) {
  if (!engine.time_device_replays(1)) return "host clock around each run";
  return settings.host_clock ? "host clock around each run, input and output copies included"
                             : cat("device events around ", kReplaysPerSample, " graph replays per sample");
}

TimedRuns time_engine(Engine& engine, const Tensor& input, const BenchSettings& settings) {
  require(settings.warmup_seconds >= 0 && settings.duration_seconds > 0,
          "warm-up must be >= 0 s and duration > 0 s");
  if (!settings.host_clock && engine.time_device_replays(1)) {
    engine.run(input);  // the input the replays compute on
    const auto warmup_start = Clock::now();
    do {
      engine.time_device_replays(kReplaysPerSample);
    } while (elapsed_ms(warmup_start) < settings.warmup_seconds * 1000.0);
    TimedRuns timed;
    const auto start = Clock::now();
    while (elapsed_ms(start) < settings.duration_seconds * 1000.0 ||
           static_cast<int>(timed.milliseconds.size()) < settings.min_iterations) {
      timed.milliseconds.push_back(*engine.time_device_replays(kReplaysPerSample));
    }
    timed.wall_seconds = elapsed_seconds(start);
    timed.runs = static_cast<std::int64_t>(timed.milliseconds.size()) * kReplaysPerSample;
    return timed;
  }
  const auto warmup_start = Clock::now();
  do {
    engine.run(input);
  } while (elapsed_ms(warmup_start) < settings.warmup_seconds * 1000.0);

  TimedRuns timed;
  const auto start = Clock::now();
  while (elapsed_ms(start) < settings.duration_seconds * 1000.0 ||
         static_cast<int>(timed.milliseconds.size()) < settings.min_iterations) {
    const auto begin = Clock::now();
    engine.run(input);
    timed.milliseconds.push_back(elapsed_ms(begin));
  }
  timed.wall_seconds = elapsed_seconds(start);
  timed.runs = static_cast<std::int64_t>(timed.milliseconds.size());
  return timed;
}

LatencyStats summarize(const TimedRuns& timed, std::int64_t batch) {
  require(!timed.milliseconds.empty() && timed.runs > 0 && timed.wall_seconds > 0, "no timed iterations");
  std::vector<double> sorted = timed.milliseconds;
  std::sort(sorted.begin(), sorted.end());
  LatencyStats stats;
  stats.iterations = static_cast<int>(sorted.size());
  const std::size_t n = sorted.size();
  stats.median_ms = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  stats.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  stats.min_ms = sorted.front();
  stats.max_ms = sorted.back();
  stats.p90_ms = percentile(sorted, 0.90);
  stats.p99_ms = percentile(sorted, 0.99);
  double squares = 0;
  for (const double value : sorted) squares += (value - stats.mean_ms) * (value - stats.mean_ms);
  stats.stddev_ms = std::sqrt(squares / static_cast<double>(n));
  stats.runs = timed.runs;
  stats.wall_seconds = timed.wall_seconds;
  stats.images_per_second = static_cast<double>(timed.runs * batch) / timed.wall_seconds;
  return stats;
}

std::string layer_group(OpKind op) { return std::string(op_info(op).layer_group); }

LayerProfile profile_engine(Engine& engine, const Tensor& input, int iterations) {
  require(iterations >= 1, "profile iterations must be >= 1");
  LayerProfile profile;
  for (int i = 0; i < iterations; ++i) {
    engine.run(input);
    const auto layers = engine.last_profile();
    require(!layers.empty(), "the engine was not compiled for profiling");
    if (profile.layers.empty()) {
      profile.layers = layers;
      for (auto& layer : profile.layers) layer.milliseconds = 0;
    }
    for (std::size_t k = 0; k < layers.size() && k < profile.layers.size(); ++k) {
      profile.layers[k].milliseconds += layers[k].milliseconds / iterations;
    }
  }
  for (const auto& layer : profile.layers) {
    profile.group_ms[layer_group(layer.op)] += layer.milliseconds;
    profile.total_ms += layer.milliseconds;
  }
  return profile;
}

}  // namespace kiln
