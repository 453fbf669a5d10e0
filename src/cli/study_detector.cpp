#include "cli/study_detector.h"

#include <iostream>

#include "cli/option_checks.h"
#include "core/error.h"
#include "families/registry.h"
#include "manifest/manifest_location.h"
#include "pipeline/detector_study.h"
#include "pipeline/model_source.h"
#include "runtime/engine.h"
#include "study/detector_report.h"

namespace kiln::cli {
namespace {

// The checkpoint, its config.json and the detection set: the options', else the manifest's demo.
struct DetectorStudySources {
  bool demo = false;
  std::filesystem::path checkpoint;
  std::filesystem::path config;
  std::string data;
};

DetectorStudySources study_sources(const StudyCommandOptions& options, const Manifest& manifest,
                                   const DetectorStudySpec& spec) {
  DetectorStudySources sources;
  sources.demo = !options.checkpoint;
  if (sources.demo && !(spec.study.demo_checkpoint && spec.study.demo_data))
    usage_error(cat(manifest.path.string(),
                    ": give --checkpoint and --data (this manifest names no "
                    "study.demo_checkpoint / study.demo_data)"));
  sources.checkpoint = sources.demo ? *spec.study.demo_checkpoint : *options.checkpoint;
  const std::optional<std::filesystem::path> config =
      options.config ? options.config : (sources.demo ? spec.demo_config : std::nullopt);
  sources.config = config.value_or(sources.checkpoint.parent_path() / "config.json");
  sources.data = options.data ? *options.data : (sources.demo ? spec.study.demo_data->string() : "");
  if (sources.data.empty())
    usage_error("kiln study needs --data with a --checkpoint (a labelled detection set in the YOLO layout)");
  return sources;
}

DetectorStudySpec detector_spec(const StudyCommandOptions& options, const Manifest& manifest) {
  if (options.calibration_data || options.fake_quant_images)
    usage_error(
        cat(manifest.path.string(), " is a detector family's manifest; ",
            options.calibration_data ? "--calib" : "--fake-quant-images",
            " is for classifier studies (a detector study calibrates on every k-th image of --data)"));
  DetectorStudySpec spec = detector_study_spec_from_manifest(manifest);
  apply_study_overrides(options, spec.study);
  for (const StudyVariant& variant : spec.study.variants) require_detector_variant(variant);
  if (options.min_score) spec.parity_min_score = *options.min_score;
  if (options.resamples) spec.bootstrap_resamples = *options.resamples;
  return spec;
}

void print_demo_note(const DetectorStudySources& sources, const DetectorStudySpec& spec) {
  std::cerr << "kiln study: no --checkpoint, so this is the demo: " << sources.checkpoint.string()
            << (spec.study.demo_description.empty() ? std::string(" and ") + sources.data
                                                    : " (" + spec.study.demo_description + ")")
            << ". Give --checkpoint (a trained detector's model.safetensors, its config.json beside it) and "
               "--data (a labelled detection set in the YOLO layout) for a real study, and --backend cuda to "
               "time it on a GPU (FP8 layers on its E4M3 tensor cores).\n";
}

}  // namespace

void study_detector(const StudyCommandOptions& options, const Manifest& manifest) {
  const DetectorInfo* detector = find_detector(manifest.family);
  require(detector != nullptr, manifest.path.string(), ": ", manifest.family, " is not a detector family");
  const DetectorStudySpec spec = detector_spec(options, manifest);
  const DetectorStudySources sources = study_sources(options, manifest, spec);
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  refuse_strict_precision_without_timing(options, backend);
  const std::filesystem::path out =
      options.output.value_or(std::filesystem::path("study-" + manifest.family));
  StudyCommandOptions guarded = options;
  guarded.config = sources.config;  // the demo's config too is an input the report must not replace
  prepare_output_folder(guarded, manifest, spec.study, sources.checkpoint, sources.data, out);
  if (sources.demo) print_demo_note(sources, spec);

  // Built at its config's own input size, as a classifier study builds a checkpoint at its own.
  const YoloConfig config = read_yolo_config(sources.config);
  std::vector<std::string> notes;
  if (config.imgsz != manifest.input_size) {
    notes.push_back(cat("built at ", config.imgsz, " x ", config.imgsz, ", the input size of `",
                        sources.config.filename().string(), "`; the manifest builds at ", manifest.input_size,
                        " x ", manifest.input_size));
  }
  Manifest sized = manifest;
  sized.input_size = config.imgsz;
  pipeline::ModelSource source = pipeline::load_model_source(
      sized, sources.checkpoint, sources.config,
      sources.demo ? pipeline::Sha256Pin::kNotThisFile : pipeline::Sha256Pin::kEnforce);
  pipeline::DetectorStudyInputs inputs{
      {std::move(source.input), spec.study, sources.data, backend, options.strict_backend, out, sources.demo,
       options.command_line, manifest.path, manifest.hub_id, "", source.detector},
      spec,
      detector,
      source.to_input,
      notes,
      sources.demo};
  inputs.study.strict_precision = options.strict_precision;
  inputs.study.backend_options = study_backend_options(options, backend);
  inputs.study.timing_program = running_program();
  const DetectorStudyResult result = pipeline::run_detector_study(inputs);
  for (const std::string& warning : result.study.all_warnings())
    std::cerr << "kiln: warning: " << warning << "\n";
  for (const std::string& outlier : result.study.timing.outliers)
    std::cerr << "note: outlier: " << outlier << "\n";
  write_detector_study(out, result);
  const std::string report = detector_study_markdown(result);
  std::cout << report.substr(0, report.find("## Recipe")) << "Full report: " << (out / "STUDY.md").string()
            << " (numbers in " << (out / "study.json").string() << ")\n";
}

}  // namespace kiln::cli
