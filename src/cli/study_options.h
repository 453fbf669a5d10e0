// What `kiln study` was given, shared by its classifier and detector paths: the options, the
// manifest's [study] values they override, and the report folder made ready for the run.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "backends/backend.h"
#include "study/study_spec.h"

namespace kiln::cli {

struct StudyCommandOptions {
  std::string manifest;
  std::optional<std::filesystem::path> checkpoint;
  std::optional<std::filesystem::path> config;
  std::optional<std::string> data;
  std::string backend;
  bool strict_backend = false;
  bool strict_precision = false;
  std::vector<std::string> cuda_options;  // --cuda-option NAME=VALUE, in the order given
  std::optional<std::filesystem::path> output;
  std::optional<std::int64_t> batch;
  std::vector<std::int64_t> batches;  // the speed matrix's, instead of the manifest's
  std::vector<std::int64_t> opt_levels;
  std::optional<int> rounds;
  std::optional<double> seconds;
  double seconds_given = 0.0;  // --seconds-per-round, moved to `seconds` when given
  bool force = false;          // replace an earlier study's report in the -o folder
  std::vector<std::string> variants;
  std::optional<std::size_t> images;
  std::optional<std::size_t> every;
  std::optional<std::string> calibration_data;  // --calib: calibrate on these instead of the data's
  std::optional<std::size_t> fake_quant_images;
  // Detector families only: box parity's minimum score and the mAP bootstrap's resamples.
  std::optional<double> min_score;
  std::optional<std::size_t> resamples;
  std::filesystem::path families_dir{default_families_dir()};
  std::string command_line;
};

// The options that override the manifest's [study] values (batch, matrix, rounds, images, variants).
void apply_study_overrides(const StudyCommandOptions& options, StudySpec& spec);
// --strict-precision only changes builds on a backend that times kernels (cuda): elsewhere it is refused.
void refuse_strict_precision_without_timing(const StudyCommandOptions& options, const std::string& backend);
// --cuda-option resolved by the cuda backend (every option, for the variants' builds); refused on another
// backend, and a bad NAME=VALUE is a usage error. Empty where none was given: the backend's defaults.
BackendOptions study_backend_options(const StudyCommandOptions& options, const std::string& backend);

// The -o folder: never over the study's inputs, never a mix with an earlier run (--force).
// Drops the manifest's variants `backend` cannot run on this machine (bf16 without bf16 kernels, int8 on
// cuda), saying so in one line each; variants given with --variants are kept (the study refuses them).
void leave_out_variants_backend_refuses(const StudyCommandOptions& options, const std::string& backend,
                                        StudySpec& spec);

void prepare_output_folder(const StudyCommandOptions& options, const Manifest& manifest,
                           const StudySpec& spec, const std::filesystem::path& checkpoint,
                           const std::string& data, const std::filesystem::path& out);

}  // namespace kiln::cli
