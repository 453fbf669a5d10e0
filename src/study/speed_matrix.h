// The study's speed matrix: the baseline and one variant per FP8 recipe timed at every batch of
// study.batches and every level of study.opt_levels, so that a decision at one batch and level says
// whether it holds at the others. One round per cell, much shorter than the main rounds: the cells
// answer "does the ranking change", the main table gives the precise figures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "backends/backend.h"
#include "study/child_timing.h"
#include "study/study_spec.h"

namespace kiln {

// What an optimization level changes on a backend: the graph passes it runs and, where the backend
// times kernels, whether it times them.
struct OptLevelEffect {
  std::int64_t level = 0;
  int pass_level = 0;
  std::vector<std::string> passes;  // in the order they run
  std::string tactics;              // "timed", "heuristic" or "none chosen" (a backend that chooses none)
  std::int64_t same_as = -1;        // an earlier level of the matrix that builds the same plan, or -1
  std::string description() const;  // "passes: a, b; tactics: timed"
};

OptLevelEffect opt_level_effect(std::int64_t level, const Backend& backend);

// One variant at one batch and level.
struct MatrixCell {
  std::int64_t batch = 1;
  std::int64_t opt_level = 0;
  std::string variant;
  double latency_ms = 0.0;         // median of the cell's timed runs
  double images_per_second = 0.0;  // timed runs x batch / their wall seconds
  double speedup = 0.0;            // the baseline's latency in this cell over this one's
  std::uintmax_t plan_bytes = 0;
  bool main_study = false;  // the main rounds' figures (the study's own batch and level)
};

struct SpeedMatrix {
  std::vector<std::string> variants;
  std::vector<OptLevelEffect> levels;  // of study.opt_levels, in order
  std::vector<std::int64_t> batches;
  std::vector<MatrixCell> cells;  // batch-major, then level, then variant
  double seconds = 0.0;           // what the matrix added to the study
  nlohmann::json to_json() const;
};

// The variants the matrix times: the baseline, and the first variant of each FP8 recipe but auto (its
// search would run again at every level; the calibrator does not change which layers run in FP8).
std::vector<StudyVariant> matrix_variants(const StudySpec& spec);

struct MatrixRun {
  const StudySpec& spec;
  std::string backend;
  bool strict_backend = false;
  std::string tactic_cache;  // shared with the study's builds, so a backend that times kernels does so once
  // A variant's plan at a level: the study's own for its level, otherwise built (and written) anew.
  std::function<std::shared_ptr<const Plan>(const StudyVariant&, std::int64_t level)> plan;
  std::function<std::uintmax_t(const StudyVariant&, std::int64_t level)> plan_bytes;
  std::function<Tensor(std::int64_t batch)> input;
  // The main rounds' figures of a variant (latency, images/s, speed-up), for the study's own cell.
  std::function<MatrixCell(const std::string& variant)> main_figures;
  // Where set, each cell is timed by a `kiln bench` process of its own (child_timing.h).
  std::optional<ChildTiming> child;
};

SpeedMatrix run_speed_matrix(const MatrixRun& run);

}  // namespace kiln
