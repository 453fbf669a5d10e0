// kiln build: a manifest (or family) plus a checkpoint in, a plan file out.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "builder/build_plan.h"
#include "cli/build_option_checks.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/option_checks.h"
#include "cli/output_checks.h"
#include "core/error.h"
#include "io/json_formats.h"
#include "io/output_guard.h"
#include "io/utf8_text.h"
#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "pipeline/build_settings.h"
#include "pipeline/model_source.h"
#include "plan/plan_writer.h"
#include "quant/calibration_images.h"
#include "runtime/engine.h"

namespace kiln::cli {

namespace {

struct BuildCommandOptions {
  std::string manifest;
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;
  std::filesystem::path output;
  std::optional<std::string> precision;
  std::optional<std::int64_t> opt_level;
  std::optional<std::int64_t> batch;
  std::optional<std::string> backend;
  bool strict_backend = false;
  bool strict_precision = false;
  std::vector<std::string> disabled_passes;
  std::filesystem::path families_dir{default_families_dir()};
  std::string tactic_cache;
  std::vector<std::string> cuda_options;  // --cuda-option NAME=VALUE, in the order given
  pipeline::Fp8Options fp8;
  bool list_passes = false;
  bool verbose = false;
  std::optional<std::filesystem::path> json;
};

pipeline::BuildOverrides build_overrides(const BuildCommandOptions& options) {
  pipeline::BuildOverrides overrides;
  if (options.precision) {
    const auto precision = precision_from_name(*options.precision);
    require(precision.has_value(), "--precision: expected fp32, fp16, bf16, fp8 or int8, got '",
            *options.precision, "'");
    overrides.precision = *precision;
  }
  overrides.opt_level = options.opt_level;
  overrides.batch = options.batch;
  overrides.backend = options.backend;
  overrides.disabled_passes = {options.disabled_passes.begin(), options.disabled_passes.end()};
  overrides.tactic_cache = options.tactic_cache;
  overrides.backend_options = options.cuda_options;
  overrides.strict_backend = options.strict_backend;
  overrides.strict_precision = options.strict_precision;
  overrides.fp8 = options.fp8;
  return overrides;
}

// The plan and the JSON report never replace a file the build reads, nor each other.
void refuse_outputs_over_inputs(const BuildCommandOptions& options, const std::filesystem::path& manifest) {
  std::vector<NamedPath> inputs = {{"--checkpoint", options.checkpoint}, {"the manifest", manifest}};
  if (const auto config = named_if("--config", options.config)) inputs.push_back(*config);
  inputs.push_back(
      {"the config.json beside the checkpoint", options.checkpoint.parent_path() / "config.json"});
  if (const auto cache = named_if("--calib-cache", options.fp8.calib_cache)) inputs.push_back(*cache);
  if (!options.tactic_cache.empty()) inputs.push_back({"--tactic-cache", options.tactic_cache});
  check_output({"-o", options.output}, inputs);
  inputs.push_back({"-o", options.output});
  if (const auto json = named_if("--json", options.json)) check_output(*json, inputs);
}

// ", 12 kept fp16 (faster there)" when the precision tactic kept any FP8 layer fp16, and ", 9 kept fp16
// (no FP8 kernel on cuda)" for recipe layers the backend cannot run in FP8.
std::string kept_fp16_note(const Plan& plan) {
  const nlohmann::json& q = plan.info.quantization;
  const nlohmann::json tactic = q.value("precision_tactic", nlohmann::json::object());
  const std::size_t faster = tactic.value("kept_fp16", nlohmann::json::array()).size();
  const std::size_t unsupported = q.value("kept_fp16_unsupported", nlohmann::json::array()).size();
  std::string note = faster == 0 ? std::string() : cat(", ", faster, " kept fp16 (faster there)");
  const bool int8 = plan.info.precision == Precision::kI8;
  if (unsupported > 0)
    note += cat(", ", unsupported, " kept ", int8 ? "at the fallback" : "fp16", " (no ",
                int8 ? "int8" : "FP8", " kernel on ", plan.info.backend, ")");
  return note;
}

// --verbose: each layer the precision tactic compared, with both times (an int8 plan's quantized times are
// its int8 layers', under the record's fp8 names).
std::string precision_tactic_lines(const Plan& plan) {
  const nlohmann::json& tactic = plan.info.quantization.value("precision_tactic", nlohmann::json::object());
  const bool int8 = plan.info.precision == Precision::kI8;
  const std::string_view quantized = int8 ? "int8:      " : "fp8:       ";
  const std::string_view quantized_time = int8 ? " (int8 " : " (FP8 ";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  for (const char* group : {"kept_fp16", "kept_fp8"}) {
    for (const nlohmann::json& layer : tactic.value(group, nlohmann::json::array())) {
      out << (std::string_view(group) == "kept_fp16" ? "kept fp16: " : quantized)
          << layer.at("layer").get<std::string>() << quantized_time << layer.at("fp8_us").get<double>()
          << " us, fp16 " << layer.at("fp16_us").get<double>() << " us)\n";
    }
  }
  for (const nlohmann::json& layer :
       plan.info.quantization.value("kept_fp16_unsupported", nlohmann::json::array()))
    out << "kept fp16: " << layer.at("layer").get<std::string>() << " ("
        << layer.at("reason").get<std::string>() << ")\n";
  return out.str();
}

// Whether --recipe auto met its target, on the images it searched on and on the calibration images it
// did not see: "auto recipe: agreement>=0.99 met on the 16 search images (agreement 1.0000, ...), NOT met on
// 484 held-out calibration images (agreement 0.9547, ...)".
std::string auto_recipe_note(const nlohmann::json& search) {
  const auto measured = [&](const nlohmann::json& point) {
    return cat(point.at("meets_target").get<bool>() ? "met" : "NOT met", " on ");
  };
  const auto figures = [&](const nlohmann::json& point) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(4) << " (agreement " << point.at("agreement").get<double>()
         << ", logit error " << point.at("logit_error").get<double>() << ")";
    return text.str();
  };
  const auto kept = search.at("kept_out_of_fp8").get<std::size_t>();
  std::string note = cat("auto recipe: ", search.at("target").get<std::string>());
  for (const nlohmann::json& point : search.value("curve", nlohmann::json::array())) {
    if (point.at("kept").get<std::size_t>() != kept) continue;
    note += cat(" ", measured(point), "the ", search.at("images").get<std::size_t>(), " search images",
                figures(point));
  }
  if (const auto held_out = search.find("held_out"); held_out != search.end()) {
    note += cat(", ", measured(*held_out), held_out->at("images").get<std::size_t>(),
                " held-out calibration images", figures(*held_out));
  } else {
    note += ", unchecked on other images (every calibration image was searched on)";
  }
  return note;
}

void build(const BuildCommandOptions& options, const CLI::App& command) {
  if (options.list_passes) {
    check_list_passes_alone(command);
    std::cout << list_passes();
    return;
  }
  if (options.manifest.empty()) usage_error("kiln build needs a manifest (families/NAME or a family name)");
  if (options.checkpoint.empty()) usage_error("kiln build needs --checkpoint");
  if (options.output.empty()) usage_error("kiln build needs -o/--output");
  const auto start = std::chrono::steady_clock::now();
  const Manifest manifest = pipeline::load_validated_manifest(options.manifest, options.families_dir);
  refuse_outputs_over_inputs(options, manifest.path);
  check_build_options(command, {&manifest, options.precision, options.backend, options.opt_level,
                                &options.fp8, &options.cuda_options});
  pipeline::ModelSource source = pipeline::load_model_source(manifest, options.checkpoint, options.config);
  refuse_batch_beyond_host_memory(source.input.graph, options.batch.value_or(manifest.batch_sizes.front()),
                                  options.backend.value_or(manifest.backends.front()));
  const BuildOptions build_options = pipeline::build_options(manifest, build_overrides(options), source);
  if (make_backend(build_options.backend)->chooses_tactics()) {
    std::cerr << "timing kernels on the " << build_options.backend << " backend (opt level "
              << build_options.opt_level << (build_options.opt_level == 0 ? ": heuristics only" : "")
              << ")...\n";
  }

  const std::string digest = source.input.checkpoint_sha256, family = source.input.family;
  if (!build_options.precision_reason.empty())
    std::cerr << "kiln: note: precision " << build_options.precision_reason << "\n";
  const BuildResult result = pipeline::build_model(std::move(source), build_options);
  write_plan(options.output, result.plan);
  pipeline::keep_calibration_cache(options.fp8, result.plan);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto bytes = std::filesystem::file_size(options.output);
  if (options.verbose) std::cout << result.passes.str() << precision_tactic_lines(result.plan);
  if (!result.fallback_layers.empty()) {
    std::cerr << fallback_warning(result.fallback_layers, build_options.backend, default_backend()) << "\n";
    if (options.verbose) {
      for (const std::string& layer : result.fallback_layers)
        std::cout << "runs on " << default_backend() << ": " << layer << "\n";
    }
  }
  if (const nlohmann::json& data = result.plan.info.quantization.value("data", nlohmann::json());
      data.is_object() && data.contains("dataset_images"))
    std::cout << calibration_note(data) << "\n";
  if (const auto search = result.plan.info.quantization.find("auto");
      search != result.plan.info.quantization.end())
    std::cout << auto_recipe_note(*search) << "\n";
  std::cout << "built " << options.output.string() << ": " << family << ", "
            << result.plan.graph.live_node_count() << " layers, " << precision_name(build_options.precision)
            << (is_quantized(build_options.precision)
                    ? cat(" (", result.plan.info.quantization.value("quantized_layers", 0),
                          build_options.precision == Precision::kI8 ? " int8" : " FP8", " convolutions",
                          kept_fp16_note(result.plan), ", the rest ",
                          precision_name(build_options.fp8_fallback), ")")
                    : std::string())
            << ", opt level " << build_options.opt_level << ", batch " << build_options.batch << ", backend "
            << build_options.backend << ", " << std::fixed << std::setprecision(1)
            << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB, " << result.passes.change_count()
            << " rewrites, " << seconds << " s\n";
  if (options.json) {
    nlohmann::json report = {{"format", json_format::kBuild},
                             {"plan", options.output.string()},
                             {"family", family},
                             {"layers", result.plan.graph.live_node_count()},
                             {"precision", precision_name(build_options.precision)},
                             {"opt_level", build_options.opt_level},
                             {"batch", build_options.batch},
                             {"backend", build_options.backend},
                             {"bytes", bytes},
                             {"checkpoint_sha256", digest},
                             {"seconds", seconds}};
    for (const auto& run : result.passes.runs) report["passes"][run.name] = run.changes;
    if (is_quantized(build_options.precision)) report["quantization"] = result.plan.info.quantization;
    write_json_file(*options.json, report);
  }
}

// --cuda-option's help before the plugin is asked (describe_backend_options completes it).
constexpr const char* kCudaOptionHelp =
    "cuda: set one of the backend's options (repeatable); the plan records every option, so it runs the "
    "way it was built";

// --cuda-option's help with the cuda backend's own options (Backend::options_help), where it loads.
std::string cuda_option_help() {
  std::string help = kCudaOptionHelp;
  for (const std::string_view name : backend_names()) {
    try {
      const std::unique_ptr<Backend> backend = make_backend(name);
      if (!backend->takes_options()) continue;
      std::istringstream lines(backend->options_help());
      for (std::string line; std::getline(lines, line);) help += "\n  " + line;
      return help;
    } catch (const Error& error) {
      return cat(help, " (", error.what(), ")");
    }
  }
  return help + " (this kiln has no cuda backend)";
}

// The options that choose, calibrate and search an FP8 or int8 plan's layers (each says "fp8, int8:").
void add_fp8_options(CLI::App& cmd, pipeline::Fp8Options& fp8) {
  cmd.add_option(
      "--recipe", fp8.recipe,
      "fp8, int8: which convolutions are quantized: all (all but the stem), nose (all but stem and attention "
      "gates), nose-L1 (nose, and layer1 kept fp16), auto (searched for --auto-target), or "
      "include=PATTERN,...;exclude=PATTERN,... over layer names (* and ? globs); default: the "
      "manifest's");
  cmd.add_option(
      "--calib", fp8.calib_data,
      "fp8, int8: calibration images: a folder (flat or class sub-folders) or webdataset tar shards");
  add_warning_alias(
      cmd,
      cmd.add_option(
             "--images", fp8.calib_images,
             "fp8, int8: calibration images to use (default: the manifest's calibration_images, else 500; "
             "old name: --calib-images)")
          ->check(whole_between(1, kMaxCount)),
      "--calib-images");
  add_warning_alias(
      cmd,
      cmd.add_option("--every", fp8.calib_every,
                     "fp8, int8: sample images x K images at a fixed stride and calibrate on every "
                     "K-th, leaving the rest held out for kiln eval (1: calibrate on the whole "
                     "sample; old name: --calib-every)")
          ->capture_default_str()
          ->check(whole_between(1, kMaxCount)),
      "--calib-every");
  cmd.add_option("--calib-method", fp8.calib_method,
                 "fp8, int8: activation scale calibrator: max, percentile, entropy (KL on the build's grid, "
                 "E4M3 or int8) or mse "
                 "(default: the manifest's)")
      ->check(one_of({"max", "percentile", "entropy", "mse"}));
  cmd.add_option(
      "--calib-cache", fp8.calib_cache,
      "fp8, int8: activation scales: read from this file when it exists (no calibration runs), else "
      "calibrate and write them to it");
  cmd.add_option("--percentile", fp8.percentile, "fp8, int8: the percentile calibrator's percentile of |x|")
      ->capture_default_str()
      ->check(real_between(1e-9, 100.0));
  cmd.add_option(
         "--fp8-fallback", fp8.fallback,
         "fp8, int8: precision of the layers not quantized: fp16 or fp32 (default: fp16 for fp8, fp32 "
         "for int8 but fp16 for int8 on cuda)")
      ->check(one_of({"fp16", "fp32"}));
  cmd.add_option("--auto-target", fp8.auto_target,
                 "fp8, int8 --recipe auto: agreement=FRACTION (top-1 agreement with fp32 at least) or "
                 "logit-error=VALUE (||y - fp32|| / ||fp32|| at most), on the calibration images")
      ->capture_default_str();
  cmd.add_option(
         "--sensitivity-images", fp8.sensitivity_images,
         "fp8, int8 --recipe auto: calibration images the per-layer sensitivity and the search run on")
      ->capture_default_str()
      ->check(whole_between(1, kMaxCount));
  cmd.add_flag("--strict", fp8.strict,
               "fp8, int8: stop at the first unreadable calibration image instead of skipping it");
  cmd.add_option("--depthwise-input-scales", fp8.depthwise_input_scales,
                 "int8: the input scales of depthwise convolutions: per-channel (default; one scale per "
                 "channel, each calibrated alone, for tensors only depthwise convolutions read) or "
                 "per-tensor (one scale, set by the widest channel)")
      ->check(one_of({"per-channel", "per-tensor"}));
  cmd.add_flag("--quantize-residuals", fp8.quantize_residuals,
               "fp8, int8: hold the residual stream as E4M3 (int8) codes only (a tensor read by "
               "quantized layers and residual adds is stored once, quantized, and the adds read it "
               "quantized): fewer bytes where the convolutions are memory-bound; on cuda it needs kiln's "
               "Hopper kernel (sm_90)");
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto options = std::make_shared<BuildCommandOptions>();
  CLI::App* cmd = app.add_subcommand("build", "Build a plan file from a family manifest and a checkpoint");
  cmd->add_option("manifest", options->manifest,
                  "families/NAME, a manifest.toml, or a family name (looked up under --families-dir)");
  cmd->add_option("--checkpoint", options->checkpoint, "model.safetensors with timm's key names")
      ->check(CLI::ExistingFile);
  cmd->add_option("--config", options->config, "timm config.json (default: beside the checkpoint)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", options->output,
                  "The plan file to write (written to a temp file, then renamed)");
  cmd->add_option("--precision", options->precision,
                  "fp32, fp16, bf16 (cpu: CPUs with AVX512-BF16 or AMX-BF16), fp8 (FP8 E4M3 "
                  "convolutions chosen by --recipe, calibrated on --calib) or int8 (the same with int8 "
                  "convolutions; cpu, cpu-reference, and cuda on an H100 or H200); default: the manifest's, except on cpu, where its "
                  "fp16 becomes bf16 or fp32 and the build says why")
      ->check(one_of({"fp32", "fp16", "bf16", "fp8", "int8"}));
  add_fp8_options(*cmd, options->fp8);
  cmd->add_option(
         "--opt-level", options->opt_level,
         "0: no graph passes, libraries' heuristic kernels; 1: exact clean-ups, cuda times the "
         "first engine of each cuDNN graph against kiln's own convolution kernels; 2: fusions too, two "
         "engines per graph, the legacy API and dense grouped convolutions raced; 3: fusions, four "
         "engines per graph, and cuDNN kernels compiled for fused SiLU and sigmoid epilogues, which "
         "also write and read concats' and slices' channels in place (default: the manifest's)")
      ->check(whole_between(0, kMaxOptLevel));
  cmd->add_option(
         "--batch", options->batch,
         "Batch size the plan is built for, 1 to 4096 (default: the manifest's first); a batch whose "
         "activations exceed this machine's memory is refused")
      ->check(whole_between(1, kMaxBatch));
  cmd->add_option("--backend", options->backend,
                  "Backend the plan targets (default: the manifest's first); for cuda the build times each "
                  "layer's kernels on this machine's GPU and the plan stores the fastest")
      ->check(known_backend());
  cmd->add_flag("--strict-backend", options->strict_backend,
                cat(kStrictBackendHelp, "; --verbose lists them"));
  cmd->add_flag("--strict-precision", options->strict_precision,
                "fp8 or int8 on cuda: keep every layer the recipe chose in FP8 (int8), and refuse one cuda "
                "has no such kernel for; without it such a layer, or one whose fp16 convolution times "
                "faster, stays fp16 (the plan and --verbose list them)");
  cmd->add_option("--tactic-cache", options->tactic_cache,
                  "cuda: file of timed tactics to reuse and extend, so rebuilds pick the same kernels fast");
  cmd->add_option("--cuda-option", options->cuda_options, kCudaOptionHelp)->type_name("NAME=VALUE");
  cmd->add_option("--disable-pass", options->disabled_passes, "Skip a graph pass by name (repeatable)");
  cmd->add_option("--families-dir", options->families_dir, "Where family names are looked up")
      ->capture_default_str();
  cmd->add_flag("--list-passes", options->list_passes, "List the graph passes and exit");
  cmd->add_flag("-v,--verbose", options->verbose,
                "Print what each graph pass changed and, for fp8 or int8 on cuda, each layer's FP8 (int8) "
                "and fp16 times "
                "as the precision tactic compared them");
  cmd->add_option("--json", options->json, "Write a JSON build report");
  cmd->callback([options, cmd] { build(*options, *cmd); });
}

// Only for `kiln build --help`: asking the backends loads the cuda plugin and the CUDA libraries, which
// the other commands' help has no use for.
void describe_backend_options(CLI::App& app) {
  for (CLI::App* command :
       app.get_subcommands([](const CLI::App* sub) { return sub->get_name() == "build"; })) {
    if (command->parsed() == 0) continue;
    if (CLI::Option* option = command->get_option_no_throw("--cuda-option"))
      option->description(cuda_option_help());
  }
}

}  // namespace kiln::cli
