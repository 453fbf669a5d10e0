#include "study/speed_matrix.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "builder/build_plan.h"
#include "core/error.h"
#include "core/progress.h"
#include "io/npy.h"
#include "passes/pass.h"
#include "plan/plan_writer.h"
#include "runtime/benchmark.h"
#include "runtime/engine.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// `first`, then the others in their order, each once.
std::vector<std::int64_t> first_then(std::int64_t first, const std::vector<std::int64_t>& others) {
  std::vector<std::int64_t> values = {first};
  for (const std::int64_t v : others) {
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  return values;
}

std::vector<OptLevelEffect> level_effects(const StudySpec& spec, const Backend& backend) {
  std::vector<OptLevelEffect> levels;
  for (const std::int64_t level : first_then(spec.opt_level, spec.opt_levels)) {
    OptLevelEffect effect = opt_level_effect(level, backend);
    for (const OptLevelEffect& earlier : levels) {
      if (earlier.same_as < 0 && earlier.pass_level == effect.pass_level &&
          earlier.tactics == effect.tactics) {
        effect.same_as = earlier.level;
        break;
      }
    }
    levels.push_back(std::move(effect));
  }
  return levels;
}

// One short round in the matrix's cell: the engine compiled at `batch`, warmed up by one run. With a
// child timing, `input_npy` holds `input` (written once per batch).
std::pair<double, double> time_cell(const MatrixRun& run, const std::shared_ptr<const Plan>& plan,
                                    std::int64_t batch, const Tensor& input,
                                    const std::filesystem::path& input_npy) {
  BenchSettings bench;
  bench.warmup_seconds = 0.0;  // one warm-up run
  bench.duration_seconds = run.spec.matrix_seconds;
  bench.min_iterations = 1;
  if (run.child) {
    const std::filesystem::path plan_file = run.child->scratch->path() / "cell.kplan";
    write_plan(plan_file, *plan);
    const LatencyStats stats = time_in_child(*run.child, plan_file, batch, input_npy, bench, false).latency;
    return {stats.median_ms, stats.images_per_second};
  }
  CompileOptions compile;
  compile.batch = batch;
  compile.strict_backend = run.strict_backend;
  compile.tactic_cache = run.tactic_cache;
  Engine engine(plan, run.backend, compile);
  const LatencyStats stats = summarize(time_engine(engine, input, bench), batch);
  return {stats.median_ms, stats.images_per_second};
}

}  // namespace

std::string OptLevelEffect::description() const {
  std::string text = "passes: ";
  for (std::size_t i = 0; i < passes.size(); ++i) text += (i ? ", " : "") + passes[i];
  if (passes.empty()) text += "none";
  return text + "; tactics: " + tactics;
}

OptLevelEffect opt_level_effect(std::int64_t level, const Backend& backend) {
  OptLevelEffect effect;
  effect.level = level;
  effect.pass_level = pass_level_for(level);
  for (const Pass& pass : registered_passes()) {
    if (pass.level <= effect.pass_level) effect.passes.emplace_back(pass.name);
  }
  // CompileOptions::opt_level: 0 takes the libraries' heuristic choice, anything else times candidates.
  effect.tactics = !backend.chooses_tactics() ? "none chosen (the backend has one kernel per layer)"
                   : level == 0               ? "heuristic"
                                              : "timed";
  return effect;
}

std::vector<StudyVariant> matrix_variants(const StudySpec& spec) {
  std::vector<StudyVariant> chosen;
  for (const StudyVariant& v : spec.variants) {
    if (v.name == spec.baseline) chosen.insert(chosen.begin(), v);
  }
  for (const StudyVariant& v : spec.variants) {
    if (!is_quantized(v.precision) || v.recipe == "auto") continue;
    const bool seen = std::any_of(chosen.begin(), chosen.end(), [&](const StudyVariant& c) {
      return c.precision == v.precision && c.recipe == v.recipe;
    });
    if (!seen) chosen.push_back(v);
  }
  return chosen;
}

SpeedMatrix run_speed_matrix(const MatrixRun& run) {
  const auto start = Clock::now();
  const StudySpec& spec = run.spec;
  SpeedMatrix matrix;
  const std::vector<StudyVariant> variants = matrix_variants(spec);
  for (const StudyVariant& v : variants) matrix.variants.push_back(v.name);
  matrix.levels = level_effects(spec, *make_backend(run.backend));
  matrix.batches = first_then(spec.batch, spec.batches);
  const std::size_t distinct_levels = static_cast<std::size_t>(std::count_if(
      matrix.levels.begin(), matrix.levels.end(), [](const OptLevelEffect& e) { return e.same_as < 0; }));
  const std::size_t timings = (matrix.batches.size() * distinct_levels - 1) * variants.size();
  if (timings == 0) return matrix;
  Progress progress("speed matrix timings", timings);
  for (const std::int64_t batch : matrix.batches) {
    const Tensor input = run.input(batch);
    std::filesystem::path input_npy;
    if (run.child) {
      input_npy = run.child->scratch->path() / "cell.npy";
      write_npy(input_npy, input);
    }
    for (const OptLevelEffect& level : matrix.levels) {
      if (level.same_as >= 0) continue;
      const bool main = batch == spec.batch && level.level == spec.opt_level;
      const std::size_t first = matrix.cells.size();
      for (const StudyVariant& variant : variants) {
        MatrixCell cell = main ? run.main_figures(variant.name) : MatrixCell{};
        cell.batch = batch;
        cell.opt_level = level.level;
        cell.variant = variant.name;
        cell.main_study = main;
        cell.plan_bytes = run.plan_bytes(variant, level.level);
        if (!main) {
          std::tie(cell.latency_ms, cell.images_per_second) =
              time_cell(run, run.plan(variant, level.level), batch, input, input_npy);
          progress.advance();
        }
        matrix.cells.push_back(cell);
      }
      // The baseline is the matrix's first variant; the main rounds' speed-ups are per-round medians.
      for (std::size_t i = first; i < matrix.cells.size() && !main; ++i)
        matrix.cells[i].speedup = matrix.cells[first].latency_ms / matrix.cells[i].latency_ms;
    }
  }
  progress.finish();
  matrix.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return matrix;
}

nlohmann::json SpeedMatrix::to_json() const {
  nlohmann::json levels_json = nlohmann::json::array();
  for (const OptLevelEffect& e : levels) {
    levels_json.push_back({{"opt_level", e.level},
                           {"pass_level", e.pass_level},
                           {"passes", e.passes},
                           {"tactics", e.tactics},
                           {"same_plan_as", e.same_as >= 0 ? nlohmann::json(e.same_as) : nlohmann::json()}});
  }
  nlohmann::json cells_json = nlohmann::json::array();
  for (const MatrixCell& c : cells) {
    cells_json.push_back({{"batch", c.batch},
                          {"opt_level", c.opt_level},
                          {"variant", c.variant},
                          {"latency_ms", c.latency_ms},
                          {"images_per_second", c.images_per_second},
                          {"speedup", c.speedup},
                          {"plan_bytes", c.plan_bytes},
                          {"main_study", c.main_study}});
  }
  return {{"variants", variants},
          {"batches", batches},
          {"levels", levels_json},
          {"cells", cells_json},
          {"seconds", seconds}};
}

}  // namespace kiln
