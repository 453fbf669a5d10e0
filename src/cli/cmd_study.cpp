// kiln study: a family's FP8 study (its manifest's [study] variant matrix) run end to end and written up;
// a detector family's goes to study_detector.cpp.
#include <algorithm>
#include <iostream>

#include "builder/build_plan.h"
#include "cli/commands.h"
#include "cli/duration.h"
#include "cli/option_checks.h"
#include "cli/study_detector.h"
#include "cli/study_options.h"
#include "core/error.h"
#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "pipeline/model_source.h"
#include "runtime/engine.h"
#include "study/study_report.h"
#include "study/study_runner.h"

namespace kiln::cli {

namespace {

std::string shell_quoted(const std::string& text) {
  if (text.find_first_of(" '\"{}*?$") == std::string::npos) return text;
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void study(const StudyCommandOptions& options) {
  if (options.manifest.empty())
    usage_error("kiln study needs a family (families/NAME, a manifest.toml or a family name)");
  const Manifest manifest = pipeline::load_validated_manifest(options.manifest, options.families_dir);
  if (find_detector(manifest.family) != nullptr) {
    study_detector(options, manifest);
    return;
  }
  if (options.min_score || options.resamples)
    usage_error(cat(manifest.path.string(),
                    " is a classifier family's manifest; --min-score and --resamples "
                    "are for detector families (box parity, the mAP bootstrap)"));
  StudySpec spec = study_spec_from_manifest(manifest);
  apply_study_overrides(options, spec);

  // No checkpoint: the demo the manifest names (a reduced model and photos shipped in the repository).
  const bool demo = !options.checkpoint;
  if (demo && !(spec.demo_checkpoint && spec.demo_data))
    usage_error(cat(manifest.path.string(),
                    ": give --checkpoint and --data (this manifest names no "
                    "study.demo_checkpoint / study.demo_data)"));
  const std::filesystem::path checkpoint = demo ? *spec.demo_checkpoint : *options.checkpoint;
  const std::string data = options.data ? *options.data : (demo ? spec.demo_data->string() : "");
  if (data.empty())
    usage_error("kiln study needs --data with a --checkpoint (a folder of images or webdataset shards)");
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  refuse_strict_precision_without_timing(options, backend);
  leave_out_variants_backend_refuses(options, backend, spec);
  const std::filesystem::path out =
      options.output.value_or(std::filesystem::path("study-" + manifest.family));
  prepare_output_folder(options, manifest, spec, checkpoint, data, out);
  if (demo) {
    std::cerr << "kiln study: no --checkpoint, so this is the demo: " << checkpoint.string()
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
  StudyInputs study_inputs{std::move(source.input),
                           spec,
                           data,
                           backend,
                           options.strict_backend,
                           out,
                           demo,
                           options.command_line,
                           manifest.path,
                           manifest.hub_id,
                           options.calibration_data.value_or(""),
                           std::nullopt};
  study_inputs.strict_precision = options.strict_precision;
  study_inputs.backend_options = study_backend_options(options, backend);
  study_inputs.timing_program = running_program();
  const StudyResult result = run_study(study_inputs);
  for (const std::string& warning : result.all_warnings()) std::cerr << "kiln: warning: " << warning << "\n";
  for (const std::string& outlier : result.timing.outliers) std::cerr << "note: outlier: " << outlier << "\n";
  write_study(out, result);
  const std::string report = study_markdown(result);
  std::cout << report.substr(0, report.find("## Recipe")) << "Full report: " << (out / "STUDY.md").string()
            << " (numbers in " << (out / "study.json").string() << ")\n";
}

// The command as given, quoted for a shell: the report shows how to re-make it.
std::string recorded_command_line(const CLI::App& cmd, const std::string& manifest) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on `" " + name` inlined here.
  std::string line = "kiln study " + shell_quoted(manifest);
  const auto append = [&line](const std::string& word) {
    line += ' ';
    line += word;
  };
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->get_name() == "--help" || option->get_name() == "manifest" || option->count() == 0 ||
        option->get_group().empty())
      continue;
    if (option->get_expected_max() == 0) {  // a flag: its name alone
      append(option->get_name());
      continue;
    }
    for (const std::string& value : option->results()) {
      append(option->get_name());
      append(shell_quoted(value));
    }
  }
  return line;
}

// The study's matrix: batches and levels timed, rounds, the image sample and its split, the variants and
// the detector gates.
void add_matrix_options(CLI::App& cmd, StudyCommandOptions& options) {
  cmd.add_option("--batch", options.batch, "Batch size to time (default: the manifest's)")
      ->check(whole_between(1, kMaxBatch));
  cmd.add_option("--batches", options.batches,
                 "Speed matrix: batch sizes timed at every --opt-levels level, comma-separated (default: the "
                 "manifest's study.batches); --batch is always among them")
      ->delimiter(',')
      ->check(whole_between(1, kMaxBatch));
  cmd.add_option("--opt-levels", options.opt_levels,
                 "Speed matrix: optimization levels 0 to 3 (kiln build --help says what each does), "
                 "comma-separated (default: the manifest's study.opt_levels); the manifest's [build] "
                 "level is always among them")
      ->delimiter(',')
      ->check(whole_between(0, kMaxOptLevel));
  cmd.add_option("--rounds", options.rounds, "Timing rounds (default: the manifest's)")
      ->check(whole_between(1, 1000));
  add_duration_option(cmd, "--seconds-per-round", options.seconds_given,
                      "Timing per variant per round (default: the manifest's)", 1e-3, 3600.0);
  cmd.add_option("--images", options.images, "Fixed-stride sample of the data (default: the manifest's)")
      ->check(whole_between(2, kMaxCount));
  cmd.add_option("--every", options.every,
                 "Every K-th sampled image calibrates, the others are held out (default: the manifest's)")
      ->check(whole_between(2, kMaxCount));
  cmd.add_option("--calib", options.calibration_data,
                 "Calibrate on these images (a fixed-stride sample of the manifest's calibration_images) "
                 "instead of every --every-th image of --data, which is then all held out");
  cmd.add_option("--fake-quant-images", options.fake_quant_images,
                 "Held-out images each FP8 plan is also fake-quantized on (cpu-reference), to tell the "
                 "recipe's accuracy loss from the kernels'; 0: none (default: the manifest's)")
      ->check(whole_between(0, kMaxCount));
  cmd.add_option(
      "--variants", options.variants,
      "Variants to run instead of the manifest's: fp32, fp16, bf16, 'fp8 RECIPE CALIBRATOR', 'int8 RECIPE "
      "CALIBRATOR' with an optional 'depthwise=per-tensor' (comma-separated or repeated; a pattern recipe "
      "keeps its commas: 'fp8 exclude=*.conv_dw,*.se.* max'; must include the baseline)");
  cmd.add_option("--min-score", options.min_score,
                 "Detector families: box parity compares the fp32 build's boxes scoring this much or more "
                 "(default: the manifest's study.parity_min_score, else 0.25)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--resamples", options.resamples,
                 "Detector families: paired bootstrap resamples behind the mAP drop's interval (default: "
                 "the manifest's study.bootstrap_resamples, else 1000)")
      ->check(whole_between(100, 100000));
}

}  // namespace

void add_study_command(CLI::App& app) {
  auto options = std::make_shared<StudyCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "study",
      "Run a family's FP8 study: every variant of its manifest's [study] matrix built, evaluated against "
      "fp32 on held-out images, timed in interleaved rounds and profiled; writes STUDY.md, study.json and "
      "charts. A detector family (yolov10) is judged on box parity with fp32 and on mAP against the labels "
      "of a YOLO-layout detection set, the mAP drop's interval from a paired bootstrap over the images");
  cmd->add_option("manifest", options->manifest,
                  "families/NAME, a manifest.toml, or a family name (looked up under --families-dir)");
  cmd->add_option("--checkpoint", options->checkpoint,
                  "model.safetensors with timm's key names, or a detector's in its Hub layout (default: the "
                  "manifest's demo checkpoint, shipped for trying kiln out)")
      ->check(CLI::ExistingFile);
  cmd->add_option(
         "--config", options->config,
         "timm config.json, or a detector's (default: beside the checkpoint; with a detector's demo, "
         "the manifest's study.demo_config)")
      ->check(CLI::ExistingFile);
  cmd->add_option(
      "--data", options->data,
      "Images to calibrate and evaluate on: a folder (class sub-folders or flat) or webdataset tar "
      "shards; for a detector family a labelled detection set in the YOLO layout (images/ beside labels/, "
      "or data.yaml) (default with the demo: the manifest's study.demo_data)");
  cmd->add_option("--backend", options->backend,
                  "Backend every variant runs on (default: the fastest CPU backend)")
      ->check(known_backend());
  cmd->add_flag("--strict-backend", options->strict_backend, kStrictBackendHelp);
  cmd->add_flag("--strict-precision", options->strict_precision,
                "cuda: FP8 and int8 variants keep every layer their recipe chose quantized, and a layer cuda "
                "has no such kernel for fails the variant (default: such a layer, or one whose fp16 "
                "convolution times faster, stays fp16, and the report counts them)");
  cmd->add_option("--cuda-option", options->cuda_options,
                  "cuda: set one of the backend's options for every variant's build (repeatable; the "
                  "options of kiln build --help)")
      ->type_name("NAME=VALUE");
  cmd->add_option("-o,--output", options->output,
                  "Report folder (default: study-FAMILY); one holding a report is refused unless --force");
  cmd->add_flag("--force", options->force,
                "Replace the report in the -o folder: its STUDY.md, study.json, charts and the plans its "
                "study.json lists are removed first (no other file is touched)");
  add_matrix_options(*cmd, *options);
  cmd->add_option("--families-dir", options->families_dir, "Where family names are looked up")
      ->capture_default_str();
  cmd->callback([options, cmd] {
    options->command_line = recorded_command_line(*cmd, options->manifest);
    if (cmd->get_option("--seconds-per-round")->count() > 0) options->seconds = options->seconds_given;
    study(*options);
  });
}

}  // namespace kiln::cli
