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
  std::vector<std::string> disabled_passes;
  std::filesystem::path families_dir{kDefaultFamiliesDir};
  bool list_passes = false;
  bool verbose = false;
  std::optional<std::filesystem::path> json;
};

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
  require(manifest.checkpoint_sha256.empty() || manifest.checkpoint_sha256 == digest, options.checkpoint.string(),
          ": sha256 ", digest, " differs from the ", manifest.checkpoint_sha256, " that ", manifest.path.string(),
          " pins");
  LoadedModel model = load_model(manifest.family, options.checkpoint, options.config);
  require(model.config.preprocess.input_size == manifest.input_size, manifest.path.string(), ": input size ",
          manifest.input_size, " differs from the checkpoint config's ", model.config.preprocess.input_size);

  BuildOptions build_options;
  build_options.precision = manifest.precision;
  if (options.precision) {
    const auto precision = precision_from_name(*options.precision);
    require(precision.has_value() && *precision != Precision::kF8, "--precision: expected fp32 or fp16, got '",
            *options.precision, "' (fp8 builds come with a quantization recipe)");
    build_options.precision = *precision;
  }
  require(build_options.precision != Precision::kF8, manifest.path.string(),
          ": fp8 builds need a calibration step this build command does not run; use --precision fp16 or fp32");
  build_options.opt_level = options.opt_level.value_or(manifest.opt_level);
  build_options.batch = options.batch.value_or(manifest.batch_sizes.front());
  build_options.backend = options.backend.value_or(manifest.backends.front());
  build_options.disabled_passes = {options.disabled_passes.begin(), options.disabled_passes.end()};

  BuildInput input{std::move(model.graph), model.config, std::string(model.family->name),
                   options.checkpoint.filename().string(), digest};
  const BuildResult result = build_plan(std::move(input), build_options);
  write_plan(options.output, result.plan);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto bytes = std::filesystem::file_size(options.output);
  if (options.verbose) std::cout << result.passes.str();
  std::cout << "built " << options.output.string() << ": " << model.family->name << ", "
            << result.plan.graph.live_node_count() << " layers, " << precision_name(build_options.precision)
            << ", opt level " << build_options.opt_level << ", batch " << build_options.batch << ", backend "
            << build_options.backend << ", " << std::fixed << std::setprecision(1)
            << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB, " << result.passes.change_count()
            << " rewrites, " << seconds << " s\n";
  if (options.json) {
    nlohmann::json report = {{"plan", options.output.string()},       {"family", model.family->name},
                             {"layers", result.plan.graph.live_node_count()},
                             {"precision", precision_name(build_options.precision)},
                             {"opt_level", build_options.opt_level}, {"batch", build_options.batch},
                             {"backend", build_options.backend},     {"bytes", bytes},
                             {"checkpoint_sha256", digest},          {"seconds", seconds}};
    for (const auto& run : result.passes.runs) report["passes"][run.name] = run.changes;
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
  cmd->add_option("-o,--output", options->output, "The plan file to write (written to a temp file, then renamed)");
  cmd->add_option("--precision", options->precision, "fp32 or fp16 (default: the manifest's)");
  cmd->add_option("--opt-level", options->opt_level,
                  "0: no graph passes, 1: exact clean-ups, 2+: fusions too (default: the manifest's)")
      ->check(CLI::Range(0, 5));
  cmd->add_option("--batch", options->batch, "Batch size the plan is built for (default: the manifest's first)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", options->backend, "Backend the plan targets (default: the manifest's first)");
  cmd->add_option("--disable-pass", options->disabled_passes, "Skip a graph pass by name (repeatable)");
  cmd->add_option("--families-dir", options->families_dir, "Where family names are looked up")
      ->capture_default_str();
  cmd->add_flag("--list-passes", options->list_passes, "List the graph passes and exit");
  cmd->add_flag("-v,--verbose", options->verbose, "Print what each graph pass changed");
  cmd->add_option("--json", options->json, "Write a JSON build report");
  cmd->callback([options] { build(*options); });
}

}  // namespace kiln::cli
