// kiln run: classify images or .npy batches with a plan file, or straight from a checkpoint (the
// network runs in libkiln.so, cli/library_run.cpp); detect objects with a detector plan or a detector
// family's checkpoint (cli/detector_run.cpp).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/detector_commands.h"
#include "cli/library_run.h"
#include "cli/option_checks.h"
#include "cli/output_checks.h"
#include "core/error.h"
#include "eval/top_k.h"
#include "io/image.h"
#include "io/json_formats.h"
#include "io/npy.h"
#include "io/output_guard.h"
#include "io/utf8_text.h"
#include "pipeline/input_batch.h"
#include "pipeline/model_loading.h"
#include "runtime/engine.h"

namespace kiln::cli {

namespace {

struct RunOptions {
  std::filesystem::path plan;
  std::string backend;
  bool strict_backend = false;
  std::string family;
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;
  std::vector<std::filesystem::path> inputs;
  int topk = 5;
  std::optional<std::filesystem::path> save_output;
  std::optional<std::filesystem::path> json;
  std::string tactic_cache;
  double min_score = 0.25;                    // detectors: boxes printed, drawn and written to JSON
  std::optional<std::filesystem::path> draw;  // detectors: PNG with the boxes drawn
  bool allow_nonfinite = false;               // classifiers: run .npy inputs holding NaN or Inf
};

DetectorRunRequest detector_request(const RunOptions& options, std::shared_ptr<const Plan> plan) {
  return {options.plan,         std::move(plan),   options.family,      options.checkpoint,
          options.config,       options.inputs,    options.backend,     options.strict_backend,
          options.tactic_cache, options.min_score, options.save_output, options.json,
          options.draw};
}

// Which model runs, said by exactly one spelling, and no option that this model would ignore.
void check_model_options(const RunOptions& options, const CLI::App& command) {
  if (!options.plan.empty()) {
    refuse_unless(false, command, {"--family", "--checkpoint", "--config"}, "without a plan file",
                  options.plan.string() + " is a plan (it carries its family, weights and config)");
  } else if (options.family.empty()) {
    refuse_unless(false, command, {"--checkpoint", "--config"}, "with --family", "no --family was given");
    usage_error("give a plan file, or --family with --checkpoint");
  } else if (options.checkpoint.empty()) {
    usage_error("--checkpoint is required with --family");
  }
  if (!options.tactic_cache.empty()) {
    const std::string backend = options.backend.empty() ? default_backend() : options.backend;
    refuse_unless(make_backend(backend)->chooses_tactics(), command, {"--tactic-cache"},
                  "to a backend that times kernels (cuda)", "the backend is " + backend);
  }
}

// Options of one task given to a model of the other (known once the plan is read).
void check_task_options(const RunOptions& options, const CLI::App& command, bool detector) {
  const std::string model = options.plan.empty() ? "--family " + options.family : options.plan.string();
  refuse_unless(!detector, command, {"--topk"}, "to classifiers", model + " detects");
  refuse_unless(!detector, command, {"--allow-nonfinite"}, "to classifiers",
                model + " detects (its .npy inputs must hold RGB / 255 in [0, 1])");
  refuse_unless(detector, command, {"--min-score", "--draw"},
                "to detectors (a detector plan or --family yolov10)", model + " classifies");
}

// --save-output, --json and --draw never replace a file the run reads, nor each other.
void refuse_outputs_over_inputs(const RunOptions& options) {
  std::vector<NamedPath> inputs = {{"the plan", options.plan}, {"--checkpoint", options.checkpoint}};
  for (const auto& input : options.inputs) inputs.push_back({"--input", input});
  if (const auto config = named_if("--config", options.config)) inputs.push_back(*config);
  if (!options.checkpoint.empty()) {
    inputs.push_back(
        {"the config.json beside the checkpoint", options.checkpoint.parent_path() / "config.json"});
  }
  if (!options.tactic_cache.empty()) inputs.push_back({"--tactic-cache", options.tactic_cache});
  for (const auto& output : {named_if("--save-output", options.save_output), named_if("--json", options.json),
                             named_if("--draw", options.draw)}) {
    if (!output) continue;
    check_output(*output, inputs);
    inputs.push_back(*output);
  }
}

struct ClassifierRun {
  std::vector<std::string> labels;  // per batch row: the file, "file[i]" for a .npy row
  LibraryRun result;
};

// Photos go to the library decoded, to be preprocessed where the model runs (on the device on cuda); a
// .npy batch among the inputs sends every input through the batch the program makes on the host.
ClassifierRun run_classifier(const RunOptions& options, const Plan& plan, const std::string& model) {
  const LibraryModel library_model{options.plan, &plan, model};
  const LibraryEngineSettings settings{options.backend, options.strict_backend, options.tactic_cache};
  if (const auto photos = pipeline::decode_photos(options.inputs)) {
    std::vector<std::string> labels;
    for (const auto& input : options.inputs) labels.push_back(input.string());
    return {std::move(labels), run_photos_with_library(library_model, settings, *photos)};
  }
  pipeline::InputBatch batch = pipeline::load_inputs(
      options.inputs, plan.config.preprocess,
      options.allow_nonfinite ? pipeline::NonFiniteInputs::kAllow : pipeline::NonFiniteInputs::kRefuse);
  return {std::move(batch.labels), run_with_library(library_model, settings, batch.tensor)};
}

void run(const RunOptions& options, const CLI::App& command) {
  refuse_outputs_over_inputs(options);
  check_model_options(options, command);
  std::shared_ptr<const Plan> plan = options.plan.empty() ? nullptr : pipeline::load_plan(options.plan);
  const bool detector = runs_detector(options.family, plan.get());
  check_task_options(options, command, detector);
  if (detector) return run_detector(detector_request(options, plan));
  if (!plan)
    plan = std::make_shared<const Plan>(
        pipeline::build_in_memory(options.family, options.checkpoint, options.config));
  const std::string model = options.plan.empty() ? options.checkpoint.string() : options.plan.string();
  const auto [labels, result] = run_classifier(options, *plan, model);
  if (!result.fallback_layers.empty())
    std::cerr << fallback_warning(result.fallback_layers, result.backend, default_backend()) << "\n";
  const Tensor& logits = result.logits;
  if (options.save_output) write_npy(*options.save_output, logits);

  const std::vector<std::string> names = pipeline::class_names(plan->config);
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  nlohmann::json report = {{"format", json_format::kRun}, {"family", plan->info.family}, {"model", model},
                           {"backend", result.backend},   {"batch", logits.dim(0)},
                           {"seconds", result.seconds},   {"results", nlohmann::json::array()}};
  std::cout << plan->info.family << " on " << labels.size() << " input(s), " << result.backend << ", "
            << std::fixed << std::setprecision(1) << result.seconds * 1000.0 << " ms\n";
  for (std::size_t row = 0; row < labels.size(); ++row) {
    const auto ranked =
        top_k_classes(logits.f32().subspan(row * classes, classes), static_cast<std::size_t>(options.topk));
    std::cout << labels[row] << "\n";
    nlohmann::json entries = nlohmann::json::array();
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto index = static_cast<std::size_t>(ranked[i].index);
      const std::string label = index < names.size() ? names[index] : cat("class ", index);
      std::cout << "  " << i + 1 << ". " << std::setw(6) << std::setprecision(2)
                << ranked[i].probability * 100.0 << "%  " << label << " (" << index << ")\n";
      entries.push_back({{"class", index},
                         {"label", label},
                         {"probability", ranked[i].probability},
                         {"logit", ranked[i].logit}});
    }
    report["results"].push_back({{"input", labels[row]}, {"top", entries}});
  }
  if (options.json) {
    write_json_file(*options.json, report);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Classify images or .npy batches with a plan file (kiln build) or a checkpoint with --family; detect "
      "objects with a detector plan or --family yolov10");
  cmd->add_option("plan", options->plan, "A plan file; it carries its family, labels and preprocessing")
      ->check(CLI::ExistingFile);
  cmd->add_option("--family", options->family,
                  "Model family, to run a checkpoint directly (timm_resnest, timm_resnet, timm_efficientnet, "
                  "yolov10)");
  cmd->add_option("--checkpoint", options->checkpoint, "model.safetensors with timm's key names")
      ->check(CLI::ExistingFile);
  cmd->add_option("--config", options->config,
                  "timm config.json (default: config.json beside the checkpoint, else the family's defaults)")
      ->check(CLI::ExistingFile);
  cmd->add_option(
         "--input", options->inputs,
         "Images (JPEG/PNG, preprocessed as timm would; detectors letterbox them) or .npy NCHW float32 "
         "batches (detectors: letterboxed, RGB / 255 in [0, 1])")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", options->backend,
                  "Backend to run on (default: the fastest CPU backend built in)")
      ->check(known_backend());
  cmd->add_flag("--strict-backend", options->strict_backend, kStrictBackendHelp);
  cmd->add_option("--topk", options->topk, "Classes to print per input, 1 to 1000")
      ->check(whole_between(1, 1000));
  cmd->add_option("--save-output", options->save_output, "Write the logits [N, classes] as float32 .npy");
  cmd->add_option("--tactic-cache", options->tactic_cache,
                  "File of timed GPU tactics to reuse and extend (cuda)");
  cmd->add_option("--json", options->json, "Write the top-k results (detectors: the boxes) as JSON");
  cmd->add_option("--min-score", options->min_score, "Detectors: report boxes scoring at least this")
      ->check(real_between(0.0, 1.0));
  cmd->add_option("--draw", options->draw,
                  "Detectors: write the image with its boxes as PNG (name_<i>.png for several inputs)");
  cmd->add_flag(
      "--allow-nonfinite", options->allow_nonfinite,
      "Classifiers: run .npy inputs holding NaN or Inf (refused by default: backends differ on them)");
  cmd->callback([options, cmd] { run(*options, *cmd); });
}

}  // namespace kiln::cli
