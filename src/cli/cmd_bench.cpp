// kiln bench: latency and throughput of a plan, trtexec-style.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/duration.h"
#include "cli/memory_check.h"
#include "cli/option_checks.h"
#include "cli/output_checks.h"
#include "core/error.h"
#include "io/json_formats.h"
#include "io/npy.h"
#include "io/output_guard.h"
#include "io/utf8_text.h"
#include "pipeline/finite_inputs.h"
#include "pipeline/model_loading.h"
#include "runtime/benchmark.h"
#include "runtime/machine_load.h"

namespace kiln::cli {

namespace {

struct BenchOptions {
  std::filesystem::path plan;
  std::string backend;
  bool strict_backend = false;
  std::optional<std::int64_t> batch;
  BenchSettings settings;
  bool profile = false;
  int profile_iterations = 20;
  int threads = 0;
  std::string tactic_cache;
  bool verbose = false;
  std::optional<std::filesystem::path> input;
  bool allow_nonfinite = false;  // time an --input holding NaN or Inf
  std::optional<std::filesystem::path> json;
  bool end_to_end = false;
};

// Timing never runs on zeros: a seeded normal input, like real preprocessed pixels.
Tensor random_input(std::int64_t batch, std::int64_t size) {
  Tensor input(DType::kF32, {batch, 3, size, size});
  std::mt19937 generator(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& value : input.mutable_f32()) value = normal(generator);
  return input;
}

// The batch the timed runs compute on: --input's .npy (one image repeated to fill the batch, or a whole
// batch), else seeded noise. The shape must be what the plan's input takes.
Tensor timing_input(const BenchOptions& options, std::int64_t batch, std::int64_t size) {
  if (!options.input) return random_input(batch, size);
  const std::string name = options.input->string();
  const Tensor given = read_npy(*options.input);
  const Shape image = {3, size, size};
  const bool fits = given.dtype() == DType::kF32 && given.rank() == 4 &&
                    Shape(given.shape().begin() + 1, given.shape().end()) == image &&
                    (given.dim(0) == 1 || given.dim(0) == batch);
  const std::string one = cat("[1, 3, ", size, ", ", size, "]");
  require(fits, "--input ", name, ": expected a float32 .npy of shape ", one,
          batch > 1 ? cat(" or [", batch, ", 3, ", size, ", ", size, "]") : std::string(), " (batch ", batch,
          "; --batch sets another), got ", dtype_name(given.dtype()), " ", shape_str(given.shape()));
  pipeline::check_finite_inputs(
      given, "--input " + name,
      options.allow_nonfinite ? pipeline::NonFiniteInputs::kAllow : pipeline::NonFiniteInputs::kRefuse);
  return given.dim(0) == batch ? given : repeated_batch(given.reshaped(image), batch);
}

nlohmann::json stats_json(const LatencyStats& stats) {
  return {{"iterations", stats.iterations},
          {"median_ms", stats.median_ms},
          {"mean_ms", stats.mean_ms},
          {"min_ms", stats.min_ms},
          {"max_ms", stats.max_ms},
          {"p90_ms", stats.p90_ms},
          {"p99_ms", stats.p99_ms},
          {"stddev_ms", stats.stddev_ms},
          {"runs", stats.runs},
          {"wall_seconds", stats.wall_seconds},
          {"images_per_second", stats.images_per_second},
          {"definitions",
           {{"latency", "order statistics of the samples (one run, or the mean of a sample's graph replays)"},
            {"images_per_second", "runs x batch / wall_seconds of the timed runs"}}}};
}

void print_latency(const LatencyStats& stats, std::int64_t batch) {
  std::cout << std::fixed << std::setprecision(3) << "latency (ms): median " << stats.median_ms << "  p90 "
            << stats.p90_ms << "  p99 " << stats.p99_ms << "  min " << stats.min_ms << "  max "
            << stats.max_ms << "  mean " << stats.mean_ms << "  stddev " << stats.stddev_ms << "  ("
            << stats.iterations << " runs)\n"
            << std::setprecision(1) << "throughput: " << stats.images_per_second << " images/s ("
            << stats.runs << " runs of batch " << batch << " in " << std::setprecision(3)
            << stats.wall_seconds << " s wall)\n";
}

// The timed runs are cut into this many rounds of consecutive runs, whose medians show a disturbed timing.
constexpr int kBenchRounds = 5;

// A loaded machine said on stderr, with the rounds far from the median: such timings are no speed.
void print_timing_check(const TimingCheck& check) {
  for (const std::string& warning : check.warnings) {
    std::cerr << "kiln: warning: " << warning
              << "; these timings say little about the plan's speed: time it on an idle machine\n";
  }
  for (const std::string& outlier : check.outliers) std::cerr << "note: outlier: " << outlier << "\n";
}

// Kernel time per layer group, printed and as the report's "profile".
nlohmann::json profile_report(const std::shared_ptr<const Plan>& plan, const std::string& backend,
                              CompileOptions compile, const Tensor& input, int iterations) {
  compile.profile = true;
  Engine profiling(plan, backend, compile);
  const LayerProfile profile = profile_engine(profiling, input, iterations);
  std::cout << "kernel time per group (mean of " << iterations << " profiled runs):\n";
  for (const auto& [group, ms] : profile.group_ms) {
    std::cout << "  " << std::left << std::setw(22) << group << std::right << std::setw(9)
              << std::setprecision(3) << ms << " ms " << std::setw(6) << std::setprecision(1)
              << 100.0 * ms / profile.total_ms << "%\n";
  }
  std::cout << "  " << std::left << std::setw(22) << "total" << std::right << std::setw(9)
            << std::setprecision(3) << profile.total_ms << " ms\n";
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& layer : profile.layers) {
    layers.push_back({{"name", layer.name},
                      {"op", op_kind_name(layer.op)},
                      {"group", layer_group(layer.op)},
                      {"ms", layer.milliseconds}});
  }
  return {{"groups_ms", profile.group_ms}, {"total_ms", profile.total_ms}, {"layers", layers}};
}

// With --end-to-end on a device backend: whole runs timed on the host clock after the device timing.
nlohmann::json end_to_end_report(Engine& engine, const Tensor& input, BenchSettings settings,
                                 std::int64_t batch) {
  settings.host_clock = true;
  const LatencyStats stats = summarize(time_engine(engine, input, settings), batch);
  std::cout << std::fixed << std::setprecision(3) << "end to end (" << timed_region(engine, settings)
            << "): median " << stats.median_ms << " ms, " << std::setprecision(1) << stats.images_per_second
            << " images/s\n";
  nlohmann::json report = stats_json(stats);
  report["timed_region"] = timed_region(engine, settings);
  return report;
}

void bench(const BenchOptions& options, const CLI::App& command) {
  refuse_unless(options.profile, command, {"--profile-iterations"}, "with --profile",
                "--profile was not given");
  refuse_unless(options.input.has_value(), command, {"--allow-nonfinite"}, "with --input",
                "no --input was given (bench times seeded noise)");
  if (const auto json = named_if("--json", options.json)) {
    check_output(*json, {{"the plan", options.plan},
                         {"--tactic-cache", options.tactic_cache},
                         {"--input", options.input ? options.input->string() : std::string()}});
  }
  const auto plan = pipeline::load_plan(options.plan);
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  if (!options.tactic_cache.empty()) {
    refuse_unless(make_backend(backend)->chooses_tactics(), command, {"--tactic-cache"},
                  "to a backend that times kernels (cuda)", "the backend is " + backend);
  }
  CompileOptions compile;
  compile.batch = options.batch.value_or(plan->info.batch);
  refuse_batch_beyond_host_memory(plan->graph, compile.batch, backend);
  compile.threads = options.threads;
  compile.tactic_cache = options.tactic_cache;
  compile.strict_backend = options.strict_backend;
  Engine engine(plan, backend, compile);
  refuse_unless(engine.time_device_replays(1).has_value(), command, {"--end-to-end"},
                "on a backend that times device replays (cuda)",
                "the " + engine.backend() + " backend's timing already is whole runs on the host clock");
  if (!engine.fallback_layers().empty()) std::cerr << fallback_warning(engine) << "\n";
  const Tensor input = timing_input(options, compile.batch, plan->config.preprocess.input_size);

  std::cerr << "bench " << options.plan.string() << ": " << engine.backend() << ", batch " << compile.batch
            << ", warm-up " << duration_text(options.settings.warmup_seconds) << ", duration "
            << duration_text(options.settings.duration_seconds) << ", timed region: " << timed_region(engine)
            << ", input: " << (options.input ? options.input->string() : "seeded normal noise") << "\n";
  const std::vector<BackendFact> facts = make_backend(engine.backend())->environment();
  for (const BackendFact& fact : facts) std::cerr << "  " << fact.label << ": " << fact.value << "\n";
  if (options.verbose) std::cerr << engine.describe();
  std::vector<LoadSample> load = {sample_load()};
  const TimedRuns timed = time_engine(engine, input, options.settings);
  load.push_back(sample_load());
  const LatencyStats stats = summarize(timed, compile.batch);
  print_latency(stats, compile.batch);
  const std::vector<double> rounds = round_medians(timed.milliseconds, kBenchRounds);
  const TimingCheck check = check_timing(load, hardware_threads(), rounds, "the timed runs");
  print_timing_check(check);

  nlohmann::json report = {
      {"format", json_format::kBench},
      {"plan", options.plan.string()},
      {"backend", engine.backend()},
      {"batch", compile.batch},
      {"precision", precision_name(plan->info.precision)},
      {"warmup_seconds", options.settings.warmup_seconds},
      {"duration_seconds", options.settings.duration_seconds},
      {"timed_region", timed_region(engine)},
      {"input", options.input ? options.input->string() : std::string("seeded normal noise")},
      {"latency", stats_json(stats)},
      {"round_medians_ms", rounds},
      {"outliers", check.outliers},
      {"warnings", check.warnings}};
  // What the backend runs on (oneDNN's ISA and bf16, the GPU), as kiln study's environment table has it.
  for (const BackendFact& fact : facts) report["environment"][fact.key] = fact.value;
  if (!plan->info.precision_reason.empty()) report["precision_reason"] = plan->info.precision_reason;
  // The options the plan was built with, which the engine runs (Engine takes the plan's record).
  if (!plan->info.backend_options.empty() && plan->info.backend == engine.backend())
    report["backend_options"] = plan->info.backend_options;
  if (options.end_to_end)
    report["end_to_end"] = end_to_end_report(engine, input, options.settings, compile.batch);
  // What the backend compiled, step by step (the CUDA backend lists each layer's chosen tactic).
  if (const std::string steps = engine.describe(); !steps.empty()) {
    nlohmann::json lines = nlohmann::json::array();
    std::istringstream in(steps);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    report["compiled"] = lines;
  }
  if (options.profile)
    report["profile"] = profile_report(plan, engine.backend(), compile, input, options.profile_iterations);
  if (options.json) {
    write_json_file(*options.json, report);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench",
                                     "Measure a plan's latency (median of timed runs) and throughput (images "
                                     "per wall second of the timed runs)");
  cmd->add_option("plan", options->plan, "A plan file made by kiln build")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", options->backend,
                  "Backend to run on (default: the fastest CPU backend built in)")
      ->check(known_backend());
  cmd->add_flag("--strict-backend", options->strict_backend, kStrictBackendHelp);
  cmd->add_option("--batch", options->batch, "Batch size, 1 to 4096 (default: the plan's)")
      ->check(whole_between(1, kMaxBatch));
  add_duration_option(*cmd, "--warmup", options->settings.warmup_seconds,
                      "Untimed runs first, for this long (default: 1s)", 0.0, 3600.0);
  add_duration_option(*cmd, "--duration", options->settings.duration_seconds,
                      "Timed runs, for this long (default: 5s)", 1e-3, 3600.0);
  cmd->add_option("--min-iterations", options->settings.min_iterations, "Timed runs at least")
      ->capture_default_str()
      ->check(whole_between(1, kMaxCount));
  cmd->add_option(
         "--threads", options->threads,
         "CPU threads (0: kiln's choice at start: one per core on an idle machine, the cores other work "
         "leaves free on a busy one)")
      ->capture_default_str()
      ->check(whole_between(0, kMaxThreads));
  cmd->add_flag("--end-to-end", options->end_to_end,
                "Also time whole runs on the host clock, input and output copies included, after the "
                "device timing (cuda: device events around graph replays, the network's work alone); "
                "--json gives it as end_to_end");
  cmd->add_flag("--profile", options->profile,
                "Also print kernel time per layer group (separate profiled runs)");
  cmd->add_option("--profile-iterations", options->profile_iterations,
                  "With --profile: profiled runs to average")
      ->capture_default_str()
      ->check(whole_between(1, kMaxCount));
  cmd->add_option(
      "--tactic-cache", options->tactic_cache,
      "File of timed GPU tactics to reuse and extend (cuda backend; the plan's --opt-level 0 times none)");
  cmd->add_flag("--verbose", options->verbose, "Print what the backend compiled, step by step");
  cmd->add_option(
         "--input", options->input,
         "Time on this float32 .npy (e.g. from kiln preprocess): one image, repeated to fill the batch, "
         "or a whole batch (default: seeded normal noise)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--allow-nonfinite", options->allow_nonfinite,
                "Time an --input holding NaN or Inf (refused by default: backends differ on them)");
  cmd->add_option("--json", options->json, "Write every statistic (and the per-layer profile) as JSON");
  cmd->callback([options, cmd] { bench(*options, *cmd); });
}

}  // namespace kiln::cli
