// Running a study: every variant built from one checkpoint, evaluated on the held-out images against the
// fp32 build, timed in interleaved rounds on one backend, and profiled per layer group.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "builder/build_plan.h"
#include "eval/evaluate.h"
#include "plan/detector_section.h"
#include "quant/fp8_build.h"
#include "runtime/benchmark.h"
#include "runtime/machine_load.h"
#include "study/child_timing.h"
#include "study/environment.h"
#include "study/fake_quant_check.h"
#include "study/speed_matrix.h"
#include "study/study_decision.h"
#include "study/study_spec.h"

namespace kiln {

struct StudyInputs {
  BuildInput model;  // the family's graph of the checkpoint, its config and where it came from
  StudySpec spec;
  std::string data;               // anything open_dataset() takes
  std::string backend;            // runs every variant
  bool strict_backend = false;    // refuse layers the backend does not run instead of using the CPU
  std::filesystem::path out_dir;  // plans are written to out_dir/plans/
  bool demo = false;              // the shipped reduced model and photos
  std::string command;            // the command line that re-makes the study
  std::filesystem::path manifest_path;
  std::string hub_id;  // the manifest's real checkpoint ("timm/resnest50d.in1k"), named in the demo's notes
  // Calibration images from here (a fixed-stride sample of study.calibration_images) instead of every
  // k-th sampled image of `data`, which is then all held out; empty: none.
  std::string calibration_data;
  std::optional<DetectorSection> detector;  // a detector family's: every variant's plan carries it
  // FP8 and int8 variants keep every recipe layer quantized (BuildOptions::strict_precision).
  bool strict_precision = false;
  // The backend's options every variant is built with (resolved: Backend::resolve_options); empty: its
  // defaults.
  std::map<std::string, std::string> backend_options = {};
  // A kiln executable that times each plan of a backend timing device replays (cuda) in a process of
  // its own (child_timing.h says why); empty: such plans are timed in this process.
  std::filesystem::path timing_program = {};
};

struct Spread {
  double median = 0.0, low = 0.0, high = 0.0;  // median of the round medians, and their min and max
};

struct VariantResult {
  StudyVariant variant;
  std::filesystem::path plan_file;
  std::uintmax_t plan_bytes = 0;
  std::size_t fp8_layers = 0;
  std::size_t convolutions = 0;
  double build_seconds = 0.0;
  nlohmann::json quantization;  // the plan's quantization report (fp8)
  EvalResult eval;
  std::vector<double> round_medians_ms;         // one per timing round
  std::vector<double> round_images_per_second;  // per round: timed runs x batch / their wall seconds
  std::vector<double> round_end_to_end_ms;      // per round, host clock around Engine::run (device backends)
  Spread latency_ms;
  Spread end_to_end_ms;  // zero where the timed region already is the host clock
  Spread images_per_second;
  Spread speedup;  // baseline latency / this latency, per round
  LayerProfile profile;
  QualityStatistics statistics;  // the held-out accuracy figures with intervals (attach_statistics)
};

struct StudyResult {
  Environment environment;
  StudyInputs inputs;
  std::string family;
  std::string checkpoint_sha256;
  std::string timed_region;  // what the latency figures time, as `kiln bench` times the same engine
  std::string timing_image;  // the held-out image the timing batch repeats
  nlohmann::json data;       // dataset, sample and split
  std::vector<VariantResult> variants;
  StudyDecision decision;
  SpeedMatrix matrix;                 // every batch at every level (study.batches, study.opt_levels)
  FakeQuantCheck fake_quant;          // each FP8 engine against the fake quantization of its plan
  std::vector<std::string> warnings;  // what makes the study's comparisons unsound (NaN/Inf in the baseline)
  // A loaded machine or disturbed rounds (machine_load.h): no speed conclusion is drawn from the timings.
  TimingCheck timing;
  double seconds = 0.0;
  nlohmann::json to_json() const;
  // warnings and the timing's warnings, as study.json's "warnings" and the terminal list them.
  std::vector<std::string> all_warnings() const;
};

StudyResult run_study(const StudyInputs& inputs);

// Why `backend` cannot run `variant`'s precision here (bf16 on a CPU without bf16 kernels, int8 on cuda),
// or "" when it can.
std::string variant_refusal(const std::string& backend, const StudyVariant& variant);

// The speed matrix of spec.batches x spec.opt_levels (speed_matrix.h): plans[i] is variants[i]'s at the
// study's level (others are built from inputs.model), `input` makes a timing batch of a given size.
SpeedMatrix time_speed_matrix(const StudyInputs& inputs, const CalibrationImages& calibration,
                              const std::vector<std::shared_ptr<const Plan>>& plans,
                              const std::vector<VariantResult>& variants,
                              const std::function<Tensor(std::int64_t batch)>& input,
                              const std::optional<ChildTiming>& child);

// Two or more FP8 variants share one calibration pass over `calibration` (quant/shared_calibration.h).
void share_calibration_between_variants(const StudySpec& spec, CalibrationImages& calibration);

// One variant built from inputs.model at `opt_level` on inputs.backend (fp8: calibrated on
// `calibration`, layers outside FP8 in fp16), carrying inputs.detector.
Plan build_study_variant(const StudyInputs& inputs, const StudyVariant& variant,
                         const CalibrationImages& calibration, std::int64_t opt_level);

// r.variant built at the study's level and written to variant_plan_path(); fills r's plan file, size,
// build time, convolution counts and quantization report.
std::shared_ptr<const Plan> build_and_write_variant(const StudyInputs& inputs,
                                                    const CalibrationImages& calibration, VariantResult& r);

// The variant called `name`, or null.
const VariantResult* find_variant(const StudyResult& result, const std::string& name);

// Where run_study writes a variant's plan: out_dir/plans/NAME.kplan, the name made file-safe (a long one
// cut short, with a digest of the whole).
std::filesystem::path variant_plan_path(const std::filesystem::path& out_dir, const std::string& variant);

}  // namespace kiln
