#include "study/timing_rounds.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/progress.h"
#include "io/npy.h"
#include "runtime/benchmark.h"

namespace kiln {

Spread spread_of(std::vector<double> values) {
  require(!values.empty(), "spread_of: no value");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return {median, values.front(), values.back()};
}

std::optional<ChildTiming> child_timing_for(const StudyInputs& inputs, Engine& engine) {
  if (inputs.timing_program.empty() || !engine.time_device_replays(1)) return std::nullopt;
  ChildTiming child;
  child.program = inputs.timing_program;
  child.scratch = std::make_shared<const ScratchFolder>("kiln-study-timing");
  child.backend = inputs.backend;
  child.strict_backend = inputs.strict_backend;
  child.tactic_cache = (inputs.out_dir / "plans" / "tactics.txt").string();
  return child;
}

std::string study_timed_region(Engine& engine, const std::optional<ChildTiming>& child) {
  return timed_region(engine) + (child ? ", each timing a `kiln bench` process of its own" : "");
}

namespace {

// One round's timing of a variant: its median and images/s, and where its engine times device replays,
// the end-to-end median (whole runs on the host clock). Its engine here, or its plan file in one
// `kiln bench` process that times both.
void time_variant(Engine& engine, VariantResult& variant, const Tensor& batch, std::int64_t batch_size,
                  const BenchSettings& settings, const std::optional<ChildTiming>& child,
                  const std::filesystem::path& input_npy) {
  const bool device = engine.time_device_replays(1).has_value();
  LatencyStats latency;
  std::optional<LatencyStats> end_to_end;
  if (child) {
    ChildTimes times = time_in_child(*child, variant.plan_file, batch_size, input_npy, settings, device);
    latency = times.latency;
    end_to_end = times.end_to_end;
  } else {
    latency = summarize(time_engine(engine, batch, settings), batch_size);
    if (device) {
      BenchSettings host = settings;
      host.host_clock = true;
      end_to_end = summarize(time_engine(engine, batch, host), batch_size);
    }
  }
  variant.round_medians_ms.push_back(latency.median_ms);
  variant.round_images_per_second.push_back(latency.images_per_second);
  if (end_to_end) variant.round_end_to_end_ms.push_back(end_to_end->median_ms);
}

}  // namespace

void time_in_rounds(const StudySpec& spec, const std::vector<Engine*>& engines, const Tensor& batch,
                    std::vector<VariantResult>& variants, const std::optional<ChildTiming>& child) {
  BenchSettings bench;
  bench.warmup_seconds = spec.warmup_seconds;
  bench.duration_seconds = spec.seconds_per_round;
  bench.min_iterations = 5;
  std::filesystem::path input_npy;
  if (child) {
    input_npy = child->scratch->path() / "input.npy";
    write_npy(input_npy, batch);
  }
  const std::size_t n = engines.size();
  // Counted in rounds, as --rounds gives them, not in variant timings.
  Progress progress("timing rounds", static_cast<std::size_t>(spec.rounds));
  for (int round = 0; round < spec.rounds; ++round) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(round)) % n;
      time_variant(*engines[i], variants[i], batch, spec.batch, bench, child, input_npy);
    }
    progress.advance();
  }
  progress.finish();
}

void summarize_rounds(const StudySpec& spec, std::vector<VariantResult>& variants) {
  const auto baseline = std::find_if(variants.begin(), variants.end(),
                                     [&](const VariantResult& r) { return r.variant.name == spec.baseline; });
  require(baseline != variants.end(), "study: the baseline '", spec.baseline, "' was not timed");
  for (VariantResult& r : variants) {
    r.latency_ms = spread_of(r.round_medians_ms);
    if (!r.round_end_to_end_ms.empty()) r.end_to_end_ms = spread_of(r.round_end_to_end_ms);
    r.images_per_second = spread_of(r.round_images_per_second);
    std::vector<double> ratios;
    for (int round = 0; round < spec.rounds; ++round) {
      ratios.push_back(baseline->round_medians_ms[static_cast<std::size_t>(round)] /
                       r.round_medians_ms[static_cast<std::size_t>(round)]);
    }
    r.speedup = spread_of(ratios);
  }
}

TimingCheck check_study_timing(const std::vector<LoadSample>& samples, const Environment& environment,
                               const std::vector<VariantResult>& variants) {
  // The load when the study started comes first: later load averages count the study's own work.
  std::vector<LoadSample> all = {{std::atof(environment.load_average.c_str()), -1}};
  all.insert(all.end(), samples.begin(), samples.end());
  TimingCheck check = check_timing(all, environment.cpu_threads, {}, "");
  for (const VariantResult& r : variants)
    merge_timing_checks(check, check_timing({}, environment.cpu_threads, r.round_medians_ms, r.variant.name));
  return check;
}

void profile_variants(const StudySpec& spec, const std::string& backend, const CompileOptions& compile,
                      const std::vector<std::shared_ptr<const Plan>>& plans, const Tensor& batch,
                      std::vector<VariantResult>& variants) {
  CompileOptions profiled = compile;
  profiled.profile = true;
  Progress progress("profile kernel time", plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    Engine engine(plans[i], backend, profiled);
    variants[i].profile = profile_engine(engine, batch, spec.profile_iterations);
    progress.advance();
  }
  progress.finish();
}

}  // namespace kiln
