#include "cli/study_options.h"

#include <algorithm>
#include <iostream>

#include "cli/option_checks.h"
#include "core/error.h"
#include "runtime/engine.h"
#include "study/study_folder.h"
#include "study/study_runner.h"

namespace kiln::cli {

void refuse_strict_precision_without_timing(const StudyCommandOptions& options, const std::string& backend) {
  if (options.strict_precision && !make_backend(backend)->chooses_tactics()) {
    usage_error(
        cat("--strict-precision applies only to a backend that times kernels (cuda), but the study runs on ",
            backend));
  }
}

BackendOptions study_backend_options(const StudyCommandOptions& options, const std::string& backend) {
  if (options.cuda_options.empty()) return {};
  if (!backend_takes_options(backend))
    usage_error(cat("--cuda-option applies only to --backend cuda, but the study runs on ", backend));
  return resolved_cuda_options(options.cuda_options, backend);
}

void apply_study_overrides(const StudyCommandOptions& options, StudySpec& spec) {
  if (options.batch) spec.batch = *options.batch;
  if (!options.batches.empty()) spec.batches = options.batches;
  if (!options.opt_levels.empty()) spec.opt_levels = options.opt_levels;
  if (options.rounds) spec.rounds = *options.rounds;
  if (options.seconds) spec.seconds_per_round = *options.seconds;
  if (options.images) spec.images = *options.images;
  if (options.every) spec.every = *options.every;
  if (options.fake_quant_images) spec.fake_quant_images = *options.fake_quant_images;
  if (!options.variants.empty()) {
    spec.variants.clear();
    try {  // a malformed, repeated or missing variant is a usage error
      for (const std::string& list : options.variants) {
        for (const std::string& text : split_study_variants(list))
          spec.variants.push_back(parse_study_variant(text));
      }
      check_study_variants(spec.variants, "--variants: ");
    } catch (const Error& error) {
      usage_error(error.what());
    }
    if (std::none_of(spec.variants.begin(), spec.variants.end(),
                     [&](const StudyVariant& v) { return v.name == spec.baseline; }))
      usage_error(cat("--variants must include the baseline '", spec.baseline, "'"));
  }
  if (options.calibration_data && !has_fp8_variant(spec.variants))
    usage_error(
        "--calib gives images to calibrate FP8 variants on, but the study has none ('fp8 RECIPE "
        "CALIBRATOR')");
}

void leave_out_variants_backend_refuses(const StudyCommandOptions& options, const std::string& backend,
                                        StudySpec& spec) {
  // The manifest lists variants for every machine (bf16 pays where the CPU has bf16 kernels, int8 runs
  // on the CPU backends); one this machine cannot run is left out with its reason. A variant asked for
  // with --variants is run or refused, never dropped.
  if (!options.variants.empty()) return;
  std::erase_if(spec.variants, [&](const StudyVariant& variant) {
    if (variant.name == spec.baseline) return false;  // the baseline's refusal stays an error
    const std::string refusal = variant_refusal(backend, variant);
    if (!refusal.empty()) std::cerr << "kiln study: variant '" << variant.name << "' left out: " << refusal << "\n";
    return !refusal.empty();
  });
}

void prepare_output_folder(const StudyCommandOptions& options, const Manifest& manifest,
                           const StudySpec& spec, const std::filesystem::path& checkpoint,
                           const std::string& data, const std::filesystem::path& out) {
  std::vector<std::filesystem::path> plans;
  for (const StudyVariant& variant : spec.variants) plans.push_back(variant_plan_path(out, variant.name));
  std::vector<NamedPath> inputs = {
      {"--checkpoint", checkpoint},
      {"the manifest", manifest.path},
      {"the config.json beside the checkpoint", checkpoint.parent_path() / "config.json"},
      {"--data", data}};
  if (options.calibration_data) inputs.push_back({"--calib", *options.calibration_data});
  if (const auto config = named_if("--config", options.config)) inputs.push_back(*config);
  refuse_study_folder_over_inputs(out, plans, inputs);
  prepare_study_folder(out, plans, options.force);
}

}  // namespace kiln::cli
