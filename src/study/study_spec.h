// What a study runs, read from the family manifest's [study] section (every key optional):
//
//   [study]
//   variants = ["fp32", "fp16", "fp8 all max", "fp8 nose-L1 max", "fp8 auto max"]
//   baseline = "fp16"             # speed-ups are against this variant
//   batch = 1                     # default: the manifest's first batch size
//   batches = [1, 32]             # the speed matrix: these batches ... (default: [input] batch)
//   opt_levels = [3, 1]           # ... at these optimization levels (default: [build] opt_level and 1)
//   matrix_seconds = 0.25         # timed seconds per variant in each matrix cell (one round)
//   images = 2000                 # fixed-stride sample of the data
//   every = 4                     # every 4th sampled image calibrates, the rest are held out
//   min_speedup = 1.05            # an FP8 variant ships only this much faster than the baseline ...
//   max_agreement_drop = 0.01     # ... losing at most this top-1 agreement with fp32 (fraction) ...
//   max_top1_drop = 0.01          # ... and at most this top-1 accuracy against labels (when labelled)
//   auto_target = "logit-error=0.05"
//   rounds = 5                    # timing: rounds over all variants, interleaved
//   seconds_per_round = 1.0       # timed seconds per variant per round (after warmup_seconds)
//   warmup_seconds = 0.3
//   profile_iterations = 10
//   fake_quant_images = 200       # held-out images each FP8 plan is also fake-quantized on (0: none)
//   demo_checkpoint = "../../tests/data/golden/resnest_tiny/model.safetensors"  # relative to the manifest
//   demo_data = "../../tests/data/photos"
//   demo_description = "a reduced ResNeSt-50d trained on ..."  # what the demo's model and data are
//   # The family in its own words, quoted by the report:
//   parts = "..."                 # the model's layer groups
//   other_layers = "..."          # the layers FP8 does not speed up
//   revisit = ["...", "..."]      # conditions that would change the decision
//   not_tried = ["...", "..."]    # what the study leaves out, beyond what the report finds itself
//   [study.recipes]               # per recipe name: the convolutions it puts in FP8 in this family
//   all = "..."
//
// A variant is "fp32", "fp16", "bf16", "fp8 RECIPE CALIBRATOR" or "int8 RECIPE CALIBRATOR" (RECIPE as
// `kiln build --recipe`, CALIBRATOR max | percentile | entropy | mse); an int8 variant may end in
// "depthwise=per-tensor" (or "depthwise=per-channel", the default), as `kiln build
// --depthwise-input-scales`. The thresholds are held against 95%
// intervals of the held-out figures, not their point estimates (study_decision.h). sensitivity_images
// (default 16): the auto recipe searches on the first that many calibration images, never on held-out ones.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "quant/auto_recipe.h"
#include "quant/depthwise_inputs.h"

namespace kiln {

struct StudyVariant {
  std::string name;
  Precision precision = Precision::kF16;
  std::string recipe;  // fp8 and int8 only
  CalibrationMethod method = CalibrationMethod::kMax;
  DepthwiseInputScales depthwise_input_scales = DepthwiseInputScales::kPerChannel;  // int8 only
};

StudyVariant parse_study_variant(std::string_view text);

// The most variants one study runs. Each is built, evaluated on every held-out image and timed in every
// round, so the default seven take minutes on a CPU; 32 is a wide sweep, and a longer list is a mistake.
inline constexpr std::size_t kMaxStudyVariants = 32;

// Fails "<where>'fp8 nose max' is given twice" (the same precision, recipe and calibrator, however
// spaced), or "<where>N variants, more than a study runs (32 at most)": a variant listed twice would be
// built, evaluated and timed twice, and the report would list it twice.
void check_study_variants(const std::vector<StudyVariant>& variants, const std::string& where);

// Whether any of `variants` runs FP8 layers (and so needs calibration).
bool has_fp8_variant(const std::vector<StudyVariant>& variants);

// A comma-separated list of variants ("fp32,fp16,fp8 exclude=*.conv_dw,*.se.* max"): a comma starts the
// next variant only where one of fp32, fp16, bf16, fp8 or int8 follows it, so a pattern recipe keeps its
// own commas.
std::vector<std::string> split_study_variants(std::string_view list);

// The family described by its manifest, for the report; empty where the manifest says nothing.
struct StudyFamilyText {
  std::string parts;
  std::map<std::string, std::string> recipes;
  std::string other_layers;
  std::vector<std::string> revisit;
  std::vector<std::string> not_tried;
  nlohmann::json to_json() const;
};

struct StudySpec {
  std::vector<StudyVariant> variants;
  std::string baseline = "fp16";
  std::int64_t batch = 1;
  std::int64_t opt_level = 3;
  std::vector<std::int64_t> batches;     // the speed matrix; empty: none
  std::vector<std::int64_t> opt_levels;  // at least the study's own level
  double matrix_seconds = 0.25;
  std::size_t images = 2000;
  std::size_t every = 4;
  std::size_t calibration_images = 500;
  double min_speedup = 1.05;
  double max_agreement_drop = 0.01;
  double max_top1_drop = 0.01;
  AutoTarget auto_target;
  std::size_t sensitivity_images = 16;
  int rounds = 5;
  double seconds_per_round = 1.0;
  double warmup_seconds = 0.3;
  int profile_iterations = 10;
  std::size_t fake_quant_images = 200;  // the simulation is single-threaded per engine: kept cheap
  std::optional<std::filesystem::path> demo_checkpoint;  // resolved against the manifest's folder
  std::optional<std::filesystem::path> demo_data;
  std::string demo_description;  // what the demo's model and data are, in one sentence
  StudyFamilyText text;
  nlohmann::json to_json() const;
};

// Fails naming the manifest and the [study] key on a bad value.
StudySpec study_spec_from_manifest(const Manifest& manifest);

}  // namespace kiln
