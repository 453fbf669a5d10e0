// kiln study: a family's FP8 study (its manifest's [study] variant matrix) run end to end and written up.
#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/duration.h"
#include "cli/option_checks.h"
#include "cli/study_output.h"
#include "core/error.h"
#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "pipeline/model_source.h"
#include "runtime/engine.h"
#include "study/study_report.h"
#include "study/study_runner.h"

namespace kiln::cli {

namespace {

struct StudyCommandOptions {
  std::string manifest;
  std::optional<std::filesystem::path> checkpoint;
  std::optional<std::filesystem::path> config;
  std::optional<std::string> data;
  std::string backend;
  bool strict_backend = false;
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
  std::filesystem::path families_dir{default_families_dir()};
  std::string command_line;
};

std::string shell_quoted(const std::string& text) {
  if (text.find_first_of(" '\"{}*?$") == std::string::npos) return text;
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The -o folder: never over the study's inputs, never a mix with an earlier run (--force).
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

void study(const StudyCommandOptions& options) {
  require(!options.manifest.empty(),
          "kiln study needs a family (families/NAME, a manifest.toml or a family name)");
  const Manifest manifest = pipeline::load_validated_manifest(options.manifest, options.families_dir);
  StudySpec spec = study_spec_from_manifest(manifest);
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
    for (const std::string& text : options.variants) spec.variants.push_back(parse_study_variant(text));
    require(std::any_of(spec.variants.begin(), spec.variants.end(),
                        [&](const StudyVariant& v) { return v.name == spec.baseline; }),
            "--variants must include the baseline '", spec.baseline, "'");
  }

  // No checkpoint: the demo the manifest names (a reduced model and photos shipped in the repository).
  const bool demo = !options.checkpoint;
  require(!demo || (spec.demo_checkpoint && spec.demo_data), manifest.path.string(),
          ": give --checkpoint and --data (this manifest names no study.demo_checkpoint / study.demo_data)");
  const std::filesystem::path checkpoint = demo ? *spec.demo_checkpoint : *options.checkpoint;
  const std::string data = options.data ? *options.data : (demo ? spec.demo_data->string() : "");
  require(!data.empty(),
          "kiln study needs --data with a --checkpoint (a folder of images or webdataset shards)");
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  const std::filesystem::path out =
      options.output.value_or(std::filesystem::path("study-" + manifest.family));
  prepare_output_folder(options, manifest, spec, checkpoint, data, out);
  if (demo) {
    std::cerr
        << "kiln study: no --checkpoint, so this is the demo: " << checkpoint.string()
        << (spec.demo_description.empty() ? std::string(" and ") + data
                                          : " (" + spec.demo_description + ")")
        << ". Give --checkpoint (a Hub model.safetensors) and --data (ImageNet validation "
           "shards) for a real study, and --backend cuda to time it on a GPU (FP8 layers on its E4M3 "
           "tensor cores).\n";
  }

  pipeline::ModelSource source =
      pipeline::load_model_source(manifest, checkpoint, options.config,
                                  demo ? pipeline::Sha256Pin::kNotThisFile : pipeline::Sha256Pin::kEnforce);
  require(!source.detector, manifest.path.string(), ": kiln study is for classifier families; ",
          manifest.family, " is a detector (compare its plans with kiln eval)");
  StudyInputs study_inputs{
      std::move(source.input), spec,          data,           backend, options.strict_backend, out, demo,
      options.command_line,    manifest.path, manifest.hub_id, options.calibration_data.value_or("")};
  const StudyResult result = run_study(study_inputs);
  for (const std::string& warning : result.warnings) std::cerr << "kiln: warning: " << warning << "\n";
  write_study(out, result);
  const std::string report = study_markdown(result);
  std::cout << report.substr(0, report.find("## Recipe")) << "Full report: " << (out / "STUDY.md").string()
            << " (numbers in " << (out / "study.json").string() << ")\n";
}

}  // namespace

void add_study_command(CLI::App& app) {
  auto options = std::make_shared<StudyCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "study",
      "Run a family's FP8 study: every variant of its manifest's [study] matrix built, evaluated against "
      "fp32 on "
      "held-out images, timed in interleaved rounds and profiled; writes STUDY.md, study.json and charts");
  cmd->add_option("manifest", options->manifest,
                  "families/NAME, a manifest.toml, or a family name (looked up under --families-dir)");
  cmd->add_option(
         "--checkpoint", options->checkpoint,
         "model.safetensors with timm's key names (default: the manifest's demo checkpoint, a reduced "
         "model trained on Fashion-MNIST, shipped for trying kiln out)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--config", options->config, "timm config.json (default: beside the checkpoint)")
      ->check(CLI::ExistingFile);
  cmd->add_option(
      "--data", options->data,
      "Images to calibrate and evaluate on: a folder (class sub-folders or flat) or webdataset tar "
      "shards (default with the demo: the repository's photos)");
  cmd->add_option("--backend", options->backend,
                  "Backend every variant runs on (default: the fastest CPU backend)");
  cmd->add_flag("--strict-backend", options->strict_backend, kStrictBackendHelp);
  cmd->add_option("-o,--output", options->output,
                  "Report folder (default: study-FAMILY); one holding a report is refused unless --force");
  cmd->add_flag("--force", options->force,
                "Replace the report in the -o folder: its STUDY.md, study.json, charts and the plans its "
                "study.json lists are removed first (no other file is touched)");
  cmd->add_option("--batch", options->batch, "Batch size to time (default: the manifest's)")
      ->check(whole_between(1, kMaxBatch));
  cmd->add_option(
         "--batches", options->batches,
         "Speed matrix: batch sizes timed at every --opt-levels level, comma-separated (default: the "
         "manifest's study.batches); --batch is always among them")
      ->delimiter(',')
      ->check(whole_between(1, kMaxBatch));
  cmd->add_option("--opt-levels", options->opt_levels,
                  "Speed matrix: optimization levels 0 to 5, comma-separated (default: the manifest's "
                  "study.opt_levels); the manifest's [build] level is always among them")
      ->delimiter(',')
      ->check(whole_between(0, 5));
  cmd->add_option("--rounds", options->rounds, "Timing rounds (default: the manifest's)")
      ->check(whole_between(1, 1000));
  add_duration_option(*cmd, "--seconds-per-round", options->seconds_given,
                      "Timing per variant per round (default: the manifest's)", 1e-3, 3600.0);
  cmd->add_option("--images", options->images, "Fixed-stride sample of the data (default: the manifest's)")
      ->check(whole_between(2, kMaxCount));
  cmd->add_option("--every", options->every,
                  "Every K-th sampled image calibrates, the others are held out (default: the manifest's)")
      ->check(whole_between(2, kMaxCount));
  cmd->add_option("--calib", options->calibration_data,
                  "Calibrate on these images (a fixed-stride sample of the manifest's calibration_images) "
                  "instead of every --every-th image of --data, which is then all held out");
  cmd->add_option("--fake-quant-images", options->fake_quant_images,
                  "Held-out images each FP8 plan is also fake-quantized on (cpu-reference), to tell the "
                  "recipe's accuracy loss from the kernels'; 0: none (default: the manifest's)")
      ->check(whole_between(0, kMaxCount));
  cmd->add_option(
         "--variants", options->variants,
         "Variants to run instead of the manifest's: fp32, fp16, 'fp8 RECIPE CALIBRATOR' (comma-separated "
         "or repeated; must include the baseline)")
      ->delimiter(',');
  cmd->add_option("--families-dir", options->families_dir, "Where family names are looked up")
      ->capture_default_str();
  cmd->callback([options, cmd] {
    std::string line = "kiln study";
    line += " " + shell_quoted(options->manifest);
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->get_name() == "--help" || option->get_name() == "manifest" || option->count() == 0 ||
          option->get_group().empty())
        continue;
      if (option->get_expected_max() == 0) {  // a flag: its name alone
        line += " " + option->get_name();
        continue;
      }
      for (const std::string& value : option->results())
        line += " " + option->get_name() + " " + shell_quoted(value);
    }
    options->command_line = line;
    if (cmd->get_option("--seconds-per-round")->count() > 0) options->seconds = options->seconds_given;
    study(*options);
  });
}

}  // namespace kiln::cli
