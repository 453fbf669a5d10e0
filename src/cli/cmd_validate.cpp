// kiln validate: check family manifests, the named ones or every families/*/manifest.toml.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "core/error.h"
#include "families/registry.h"
#include "io/json_formats.h"
#include "manifest/manifest.h"
#include "manifest/manifest_location.h"
#include "pipeline/model_source.h"
#include "study/detector_study_spec.h"
#include "study/study_spec.h"

namespace kiln::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> manifests;
  std::filesystem::path families_dir{default_families_dir()};
  std::optional<std::string> json;  // FILE, "-" for stdout
};

struct Outcome {
  std::string argument;
  std::filesystem::path path;  // empty when the argument names no manifest
  std::optional<Manifest> manifest;
  std::string error;  // empty when the manifest is valid
};

Outcome check(const std::string& argument, const ValidateOptions& options,
              const std::vector<std::string>& known_families) {
  Outcome outcome{argument, {}, std::nullopt, {}};
  try {
    outcome.path = resolve_manifest_path(argument, options.families_dir);
    Manifest manifest = load_manifest(outcome.path);
    validate_manifest(manifest, known_families);
    if (!manifest.study.is_null()) {
      // The [study] section, key by key; a detector's has keys of its own (study/detector_study_spec.h).
      const bool detector = manifest.task == Task::kDetection;
      const DetectorStudySpec detector_spec =
          detector ? detector_study_spec_from_manifest(manifest) : DetectorStudySpec{};
      const StudySpec spec = detector ? detector_spec.study : study_spec_from_manifest(manifest);
      for (const auto& path : {spec.demo_checkpoint, spec.demo_data, detector_spec.demo_config}) {
        if (!path) continue;  // require() forms its message first: no path->string() of nothing
        require(std::filesystem::exists(*path), manifest.path.string(), ": study demo file ", path->string(),
                " does not exist");
      }
    }
    outcome.manifest = std::move(manifest);
  } catch (const Error& error) {
    outcome.error = error.what();
  }
  return outcome;
}

void print_text(const Outcome& outcome) {
  if (!outcome.error.empty()) {
    std::cout << "FAILED " << outcome.error << "\n";
    return;
  }
  const Manifest& manifest = *outcome.manifest;
  std::cout << "ok     " << outcome.path.string() << " (" << manifest.family << ": " << manifest.hub_id << "@"
            << manifest.revision << ", " << precision_name(manifest.precision) << ")\n";
}

nlohmann::json to_json(const Outcome& outcome) {
  nlohmann::json entry = {{"argument", outcome.argument}, {"ok", outcome.error.empty()}};
  if (!outcome.path.empty()) entry["path"] = outcome.path.string();
  if (outcome.manifest) entry["manifest"] = manifest_to_json(*outcome.manifest);
  if (!outcome.error.empty()) entry["error"] = outcome.error;
  return entry;
}

void validate(const ValidateOptions& options) {
  std::vector<NamedPath> inputs;
  for (const std::string& manifest : options.manifests) inputs.push_back({"the manifest", manifest});
  check_json_target(options.json, inputs);
  const std::vector<std::string> known_families = pipeline::known_family_names();

  std::vector<std::string> arguments = options.manifests;
  if (arguments.empty()) {
    for (const auto& path : find_family_manifests(options.families_dir)) arguments.push_back(path.string());
    require(!arguments.empty(), options.families_dir.string(), ": no */", kManifestFileName, " to validate");
  }

  bool all_ok = true;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& argument : arguments) {
    const Outcome outcome = check(argument, options, known_families);
    all_ok = all_ok && outcome.error.empty();
    report.push_back(to_json(outcome));
    if (!json_to_stdout(options.json)) print_text(outcome);
  }
  write_json_report(options.json, {{"format", json_format::kValidate}, {"ok", all_ok}, {"manifests", report}});
  // Each failure is already printed; exit 1 without a further message.
  if (!all_ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd =
      app.add_subcommand("validate", "Check family manifests (default: every families/*/manifest.toml)");
  cmd->add_option("manifests", options->manifests,
                  "A family folder, a manifest.toml, or a family name looked up in the families directory");
  cmd->add_option("--families-dir", options->families_dir,
                  "Where family names and the default manifests are looked up (default: ./families)");
  add_json_file_option(*cmd, options->json, "one report (with '-', instead of a line per manifest)");
  cmd->callback([options] { validate(*options); });
}

}  // namespace kiln::cli
