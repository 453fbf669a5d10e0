// kiln build: a manifest (or family) plus a checkpoint in, a plan file out.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "builder/build_plan.h"
#include "cli/commands.h"
#include "cli/model_loading.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/atomic_file.h"
#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "plan/plan_writer.h"
#include "quant/calibration_images.h"
#include "quant/layer_selection.h"
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
  std::vector<std::string> disabled_passes;
  std::filesystem::path families_dir{kDefaultFamiliesDir};
  // FP8
  std::optional<std::string> recipe;
  std::optional<std::string> calib_data;
  std::optional<std::size_t> calib_images;
  std::size_t calib_every = 4;
  std::optional<std::string> calib_method;
  std::optional<std::filesystem::path> calib_cache;
  std::string tactic_cache;
  double percentile = 99.99;
  std::string fp8_fallback = "fp16";
  std::string auto_target = "logit-error=0.05";
  std::size_t sensitivity_images = 16;
  bool strict = false;
  bool list_passes = false;
  bool verbose = false;
  std::optional<std::filesystem::path> json;
};

// The FP8 settings: command-line flags first, then the manifest's [quantization] section.
Quantizer fp8_quantizer(const BuildCommandOptions& options, const Manifest& manifest,
                        const Graph& model_graph, const PreprocessConfig& preprocess,
                        BuildOptions& build_options) {
  const bool cached = options.calib_cache && std::filesystem::exists(*options.calib_cache);
  require(options.calib_data.has_value() || cached,
          "fp8 builds calibrate on images: give --calib DATA (or an existing --calib-cache)");
  const QuantizationSettings defaults = manifest.quantization.value_or(QuantizationSettings{});
  require(defaults.activations == QuantGranularity::kPerTensor, manifest.path.string(),
          ": quantization.activations: only per-tensor activation scales are supported");
  Fp8Settings settings;
  settings.recipe = options.recipe.value_or(defaults.recipe.empty() ? "all" : defaults.recipe);
  settings.method = defaults.calibration;
  if (options.calib_method) {
    const auto method = calibration_method_from_name(*options.calib_method);
    require(method.has_value(), "--calib-method: expected max, percentile, entropy or mse, got '",
            *options.calib_method, "'");
    settings.method = *method;
  }
  settings.calibration.percentile = options.percentile;
  settings.per_channel_weights = defaults.weights == QuantGranularity::kPerChannel;
  const auto fallback = precision_from_name(options.fp8_fallback);
  require(fallback.has_value() && *fallback != Precision::kF8, "--fp8-fallback: expected fp16 or fp32, got '",
          options.fp8_fallback, "'");
  settings.fallback = *fallback;
  build_options.fp8_fallback = *fallback;
  settings.auto_target = parse_auto_target(options.auto_target);
  settings.sensitivity_images = options.sensitivity_images;
  settings.backend = default_backend();
  // A bad recipe fails before any image is loaded (the convolutions keep their names through the passes).
  if (settings.recipe != "auto") select_layers(model_graph, parse_recipe(settings.recipe));
  if (cached) settings.cached_scales = read_calibration_cache(*options.calib_cache);
  auto images = std::make_shared<CalibrationImages>();
  if (!options.calib_data || (cached && settings.recipe != "auto")) {
    return [settings, images](Graph& graph) { return quantize_fp8(graph, settings, *images); };
  }
  CalibrationImageOptions data;
  data.data = *options.calib_data;
  data.images = options.calib_images.value_or(
      defaults.calibration_images > 0 ? static_cast<std::size_t>(defaults.calibration_images) : 500);
  data.every = options.calib_every;
  data.strict = options.strict;
  *images = load_calibration_images(data, preprocess);
  return [settings, images](Graph& graph) { return quantize_fp8(graph, settings, *images); };
}

void build(const BuildCommandOptions& options) {
  if (options.list_passes) {
    std::cout << list_passes();
    return;
  }
  require(!options.manifest.empty(), "kiln build needs a manifest (families/NAME or a family name)");
  require(!options.checkpoint.empty(), "kiln build needs --checkpoint");
  require(!options.output.empty(), "kiln build needs -o/--output");
  const auto start = std::chrono::steady_clock::now();
  const Manifest manifest = load_manifest(resolve_manifest_path(options.manifest, options.families_dir));
  std::vector<std::string> known;
  for (const auto& family : families()) known.emplace_back(family.name);
  validate_manifest(manifest, known);

  const std::string digest = sha256_file_hex(options.checkpoint);
  require(manifest.checkpoint_sha256.empty() || manifest.checkpoint_sha256 == digest,
          options.checkpoint.string(), ": sha256 ", digest, " differs from the ", manifest.checkpoint_sha256,
          " that ", manifest.path.string(), " pins");
  LoadedModel model = load_model(manifest.family, options.checkpoint, options.config);
  require(model.config.preprocess.input_size == manifest.input_size, manifest.path.string(), ": input size ",
          manifest.input_size, " differs from the checkpoint config's ", model.config.preprocess.input_size);

  BuildOptions build_options;
  build_options.precision = manifest.precision;
  if (options.precision) {
    const auto precision = precision_from_name(*options.precision);
    require(precision.has_value(), "--precision: expected fp32, fp16 or fp8, got '", *options.precision, "'");
    build_options.precision = *precision;
  }
  if (build_options.precision == Precision::kF8) {
    build_options.quantizer =
        fp8_quantizer(options, manifest, model.graph, model.config.preprocess, build_options);
  }
  build_options.opt_level = options.opt_level.value_or(manifest.opt_level);
  build_options.batch = options.batch.value_or(manifest.batch_sizes.front());
  build_options.backend = options.backend.value_or(manifest.backends.front());
  build_options.disabled_passes = {options.disabled_passes.begin(), options.disabled_passes.end()};
  build_options.tactic_cache = options.tactic_cache;
  build_options.strict_backend = options.strict_backend;
  if (make_backend(build_options.backend)->chooses_tactics()) {
    std::cerr << "timing kernels on the " << build_options.backend << " backend (opt level "
              << build_options.opt_level << (build_options.opt_level == 0 ? ": heuristics only" : "")
              << ")...\n";
  }

  BuildInput input{std::move(model.graph), model.config, std::string(model.family->name),
                   options.checkpoint.filename().string(), digest};
  const BuildResult result = build_plan(std::move(input), build_options);
  write_plan(options.output, result.plan);
  if (options.calib_cache && !std::filesystem::exists(*options.calib_cache)) {
    write_file_atomically(*options.calib_cache, [&](std::ostream& out) {
      out << result.plan.info.quantization.at("calibration_cache").dump(2) << "\n";
    });
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto bytes = std::filesystem::file_size(options.output);
  if (options.verbose) std::cout << result.passes.str();
  if (!result.fallback_layers.empty()) {
    std::cerr << fallback_warning(result.fallback_layers, build_options.backend, default_backend()) << "\n";
    if (options.verbose) {
      for (const std::string& layer : result.fallback_layers)
        std::cout << "runs on " << default_backend() << ": " << layer << "\n";
    }
  }
  std::cout << "built " << options.output.string() << ": " << model.family->name << ", "
            << result.plan.graph.live_node_count() << " layers, " << precision_name(build_options.precision)
            << (build_options.precision == Precision::kF8
                    ? cat(" (", result.plan.info.quantization.value("fp8_layers", 0),
                          " FP8 convolutions, the rest ", precision_name(build_options.fp8_fallback), ")")
                    : std::string())
            << ", opt level " << build_options.opt_level << ", batch " << build_options.batch << ", backend "
            << build_options.backend << ", " << std::fixed << std::setprecision(1)
            << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB, " << result.passes.change_count()
            << " rewrites, " << seconds << " s\n";
  if (options.json) {
    nlohmann::json report = {{"plan", options.output.string()},
                             {"family", model.family->name},
                             {"layers", result.plan.graph.live_node_count()},
                             {"precision", precision_name(build_options.precision)},
                             {"opt_level", build_options.opt_level},
                             {"batch", build_options.batch},
                             {"backend", build_options.backend},
                             {"bytes", bytes},
                             {"checkpoint_sha256", digest},
                             {"seconds", seconds}};
    for (const auto& run : result.passes.runs) report["passes"][run.name] = run.changes;
    if (build_options.precision == Precision::kF8) report["quantization"] = result.plan.info.quantization;
    write_file_atomically(*options.json, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
  }
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
                  "fp32, fp16 or fp8 (FP8 E4M3 convolutions chosen by --recipe, calibrated on --calib; "
                  "default: the manifest's)");
  cmd->add_option(
      "--recipe", options->recipe,
      "fp8: which convolutions run in FP8: all (all but the stem), nose (all but stem and attention "
      "gates), nose-L1 (nose, and layer1 kept fp16), auto (searched for --auto-target), or "
      "include=PATTERN,...;exclude=PATTERN,... over layer names (* and ? globs); default: the "
      "manifest's");
  cmd->add_option("--calib", options->calib_data,
                  "fp8: calibration images: a folder (flat or class sub-folders) or webdataset tar shards");
  cmd->add_option("--calib-images", options->calib_images,
                  "fp8: calibration images to use (default: the manifest's calibration_images, else 500)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
         "--calib-every", options->calib_every,
         "fp8: sample calib-images x K images at a fixed stride and calibrate on every K-th, leaving "
         "the rest held out for kiln eval (1: calibrate on the whole sample)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--calib-method", options->calib_method,
                  "fp8: activation scale calibrator: max, percentile, entropy (KL on the E4M3 grid) or mse "
                  "(default: the manifest's)");
  cmd->add_option("--calib-cache", options->calib_cache,
                  "fp8: activation scales: read from this file when it exists (no calibration runs), else "
                  "calibrate and write them to it");
  cmd->add_option("--percentile", options->percentile, "fp8: the percentile calibrator's percentile of |x|")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 100.0));
  cmd->add_option("--fp8-fallback", options->fp8_fallback,
                  "fp8: precision of the layers not in FP8: fp16 or fp32")
      ->capture_default_str();
  cmd->add_option("--auto-target", options->auto_target,
                  "fp8 --recipe auto: agreement=FRACTION (top-1 agreement with fp32 at least) or "
                  "logit-error=VALUE (||y - fp32|| / ||fp32|| at most), on the calibration images")
      ->capture_default_str();
  cmd->add_option("--sensitivity-images", options->sensitivity_images,
                  "fp8 --recipe auto: calibration images the per-layer sensitivity and the search run on")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--strict", options->strict,
                "fp8: stop at the first unreadable calibration image instead of skipping it");
  cmd->add_option("--opt-level", options->opt_level,
                  "0: no graph passes, 1: exact clean-ups, 2+: fusions too (default: the manifest's)")
      ->check(CLI::Range(0, 5));
  cmd->add_option("--batch", options->batch,
                  "Batch size the plan is built for (default: the manifest's first)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", options->backend,
                  "Backend the plan targets (default: the manifest's first); for cuda the build times each "
                  "layer's kernels on this machine's GPU and the plan stores the fastest");
  cmd->add_flag("--strict-backend", options->strict_backend,
                cat(kStrictBackendHelp, "; --verbose lists them"));
  cmd->add_option("--tactic-cache", options->tactic_cache,
                  "cuda: file of timed tactics to reuse and extend, so rebuilds pick the same kernels fast");
  cmd->add_option("--disable-pass", options->disabled_passes, "Skip a graph pass by name (repeatable)");
  cmd->add_option("--families-dir", options->families_dir, "Where family names are looked up")
      ->capture_default_str();
  cmd->add_flag("--list-passes", options->list_passes, "List the graph passes and exit");
  cmd->add_flag("-v,--verbose", options->verbose, "Print what each graph pass changed");
  cmd->add_option("--json", options->json, "Write a JSON build report");
  cmd->callback([options] { build(*options); });
}

}  // namespace kiln::cli
