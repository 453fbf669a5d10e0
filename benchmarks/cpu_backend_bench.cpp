// Times full-size ResNeSt-50d (fp32) on a CPU backend: median latency over many runs after warm-up,
// optionally a per-layer profile and the compiled plan.
//
//   cpu_backend_bench [--checkpoint model.safetensors [--family timm_resnest] [--no-passes]]
//                     [--backend cpu] [--batch 1] [--threads 2] [--runs 30] [--warmup 5]
//                     [--unfused] [--profile] [--plan]
//
// With --checkpoint the family builder makes the graph from the checkpoint (config.json beside it) and
// the graph passes optimize it, as `kiln` does. Without, the graph is a ResNeSt-50d-shaped one with
// seeded random weights (testing/resnest_like_graph.h); --unfused then keeps batch norms and
// ReLUs as nodes of their own instead of the form the graph passes produce.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "families/registry.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "passes/pass_manager.h"
#include "backends/backend.h"
#include "testing/random_tensor.h"
#include "testing/resnest_like_graph.h"
#if KILN_HAVE_ONEDNN
#include "backends/cpu/onednn/compiled_model.h"
#endif

namespace kiln {
namespace {

struct Options {
  std::string checkpoint;
  std::string family = "timm_resnest";
  bool passes = true;
  std::string backend = "cpu";
  std::int64_t batch = 1;
  int threads = 2;
  int runs = 30;
  int warmup = 5;
  bool fused = true;
  bool profile = false;
  bool plan = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      require(i + 1 < argc, "missing value after ", arg);
      return argv[++i];
    };
    if (arg == "--checkpoint")
      o.checkpoint = value();
    else if (arg == "--family")
      o.family = value();
    else if (arg == "--no-passes")
      o.passes = false;
    else if (arg == "--backend")
      o.backend = value();
    else if (arg == "--batch")
      o.batch = std::stoll(value());
    else if (arg == "--threads")
      o.threads = std::stoi(value());
    else if (arg == "--runs")
      o.runs = std::stoi(value());
    else if (arg == "--warmup")
      o.warmup = std::stoi(value());
    else if (arg == "--unfused")
      o.fused = false;
    else if (arg == "--profile")
      o.profile = true;
    else if (arg == "--plan")
      o.plan = true;
    else
      fail("unknown argument '", arg, "'");
  }
  require(o.runs >= 1, "--runs must be at least 1");
  return o;
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// A coarse bucket for the profile summary: which part of a ResNeSt block a layer is.
std::string bucket(const LayerTime& layer) {
  const std::string& name = layer.name;
  // Split-attention pooling is "conv2.gap" in timm_resnest graphs and "conv2.pool" in the synthetic one.
  for (const char* part : {"conv2.conv", "conv2.fc1", "conv2.fc2", "conv2.radix_sum", "conv2.gap",
                           "conv2.pool", "conv2.rsoftmax", "conv2.weighted_sum", "avd_last", "downsample.0",
                           "downsample.1", "conv1", "conv3", "maxpool", "global_pool", "fc", "add"}) {
    if (name.find(part) != std::string::npos)
      return name.rfind("layer", 0) == 0 ? part : "stem/head " + std::string(part);
  }
  return "other " + name;
}

void print_profile(const std::vector<std::vector<LayerTime>>& runs) {
  std::map<std::string, std::vector<double>> per_layer;
  std::vector<std::string> order;
  for (const auto& run : runs) {
    for (const LayerTime& layer : run) {
      auto& times = per_layer[layer.name];
      if (times.empty()) order.push_back(layer.name);
      times.push_back(layer.milliseconds);
    }
  }
  // Minimum over runs as well as the median: on a shared machine the minimum is the steadier estimate
  // of what a layer costs undisturbed.
  std::map<std::string, double> buckets, bucket_mins;
  std::vector<std::pair<double, std::string>> layers;
  double total = 0.0, total_min = 0.0;
  for (const LayerTime& layer : runs.front()) {
    const auto& times = per_layer[layer.name];
    const double ms = median(times), min = *std::min_element(times.begin(), times.end());
    buckets[bucket(layer)] += ms;
    bucket_mins[bucket(layer)] += min;
    layers.emplace_back(min, layer.name);
    total += ms;
    total_min += min;
  }
  std::printf("profile: sum of per-layer medians %.2f ms (of minimums %.2f ms) over %zu layers\n", total,
              total_min, layers.size());
  std::vector<std::pair<double, std::string>> sorted_buckets;
  for (const auto& [name, ms] : buckets) sorted_buckets.emplace_back(ms, name);
  std::sort(sorted_buckets.rbegin(), sorted_buckets.rend());
  for (const auto& [ms, name] : sorted_buckets) {
    std::printf("  %-28s %8.2f ms %5.1f%%   min %8.2f ms\n", name.c_str(), ms, 100 * ms / total,
                bucket_mins[name]);
  }
  std::sort(layers.rbegin(), layers.rend());
  std::printf("slowest layers (minimum over runs):\n");
  for (std::size_t i = 0; i < layers.size() && i < 25; ++i) {
    std::printf("  %-36s %8.3f ms\n", layers[i].second.c_str(), layers[i].first);
  }
}

Graph load_graph(const Options& o, std::string& what) {
  if (o.checkpoint.empty()) {
    testing::ResnestLikeOptions graph_options;
    graph_options.fused = o.fused;
    what = o.fused ? "resnest50d (synthetic)" : "resnest50d (synthetic, unfused)";
    return testing::resnest_like_graph(graph_options);
  }
  const std::filesystem::path path = o.checkpoint;
  const FamilyInfo& family = find_family(o.family);
  const auto checkpoint = std::make_shared<const SafetensorsFile>(SafetensorsFile::open(path));
  ModelConfig config = family.default_config;
  if (const auto beside = path.parent_path() / "config.json"; std::filesystem::exists(beside)) {
    config = read_timm_config(beside, config);
  }
  std::map<std::string, Tensor> weights;
  for (const auto& name : checkpoint->names()) weights.emplace(name, checkpoint->tensor(name));
  Graph graph = family.build(weights, config, -1);
  what =
      cat(config.architecture.empty() ? o.family : config.architecture, " (", path.filename().string(), ")");
  if (o.passes) {
    const PassReport report = run_passes(graph);
    what += cat(", ", report.change_count(), " pass changes");
  }
  // The checkpoint's mapping stays alive through the constants' views.
  return graph;
}

int bench(const Options& o) {
  std::string what;
  const Graph graph = load_graph(o, what);
  CompileOptions compile;
  compile.batch = o.batch;
  compile.threads = o.threads;
  compile.profile = o.profile;
  const auto backend = make_backend(o.backend);
  const auto compile_start = std::chrono::steady_clock::now();
  const auto model = backend->compile(graph, compile);
  const double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();
#if KILN_HAVE_ONEDNN
  if (o.plan) {
    if (const auto* program = dynamic_cast<const onednn::CompiledProgram*>(model.get())) {
      std::printf("%s", program->describe().c_str());
    }
  }
#endif
  const Tensor x = testing::random_tensor({o.batch, 3, 224, 224}, 42);
  for (int i = 0; i < o.warmup; ++i) model->run({x});
  std::vector<double> times, cpu_times;
  std::vector<std::vector<LayerTime>> profiles;
  for (int i = 0; i < o.runs; ++i) {
    const double cpu_start = process_cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    model->run({x});
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpu_times.push_back(process_cpu_ms() - cpu_start);
    if (o.profile) profiles.push_back(model->last_profile());
  }
  // CPU time (all threads) is a steadier measure than wall time when other work shares the cores.
  // OpenMP's wait policy decides how the threads behave on a busy machine (docs/log/PERFORMANCE_LOG.md).
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::printf(
      "kiln %s %s fp32 b%lld %d threads, OMP_WAIT_POLICY=%s: median %.1f ms (min %.1f, max %.1f, "
      "%d runs, compile %.0f ms; cpu time median %.1f ms)\n",
      o.backend.c_str(), what.c_str(), static_cast<long long>(o.batch), o.threads,
      wait_policy != nullptr ? wait_policy : "(unset)", median(times),
      *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()), o.runs,
      compile_ms, median(cpu_times));
  if (o.profile) print_profile(profiles);
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  try {
    return kiln::bench(kiln::parse(argc, argv));
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "cpu_backend_bench: %s\n", e.what());
    return 1;
  }
}
