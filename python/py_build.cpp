// kiln.build (a manifest or family and a checkpoint into a plan file) and kiln.study, through the
// pipeline the kiln command uses.
#include <pybind11/stl.h>

#include <algorithm>

#include "builder/build_plan.h"
#include "io/output_guard.h"
#include "manifest/manifest_location.h"
#include "pipeline/build_settings.h"
#include "pipeline/fp8_settings.h"
#include "pipeline/model_source.h"
#include "plan/plan_writer.h"
#include "py_module.h"
#include "runtime/engine.h"
#include "study/study_folder.h"
#include "study/study_report.h"
#include "study/study_runner.h"

namespace kiln::python {

namespace {

namespace fs = std::filesystem;

template <typename T>
std::optional<T> optional_argument(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  return value.cast<T>();
}

std::optional<fs::path> optional_path(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  return fs::path(py::str(value).cast<std::string>());
}

fs::path families_dir(const py::object& value) {
  return optional_path(value).value_or(default_families_dir());
}

// Python's view of a JSON document.
py::object to_python(const nlohmann::json& json) {
  return py::module_::import("json").attr("loads")(json.dump());
}

struct BuildArguments {
  std::string manifest;
  fs::path checkpoint;
  fs::path output;
  py::object config, precision, recipe, calibration_data, calibration_images, backend, batch, opt_level,
      families;
  bool strict_backend = false;
  py::object cuda_options;  // a list of "NAME=VALUE", as `kiln build --cuda-option` takes them
};

pipeline::BuildOverrides overrides(const BuildArguments& a) {
  pipeline::BuildOverrides o;
  if (const auto name = optional_argument<std::string>(a.precision)) {
    const auto precision = precision_from_name(*name);
    require(precision.has_value(), "precision: expected fp32, fp16, bf16, fp8 or int8, got '", *name, "'");
    o.precision = *precision;
  }
  o.backend = optional_argument<std::string>(a.backend);
  o.batch = optional_argument<std::int64_t>(a.batch);
  o.opt_level = optional_argument<std::int64_t>(a.opt_level);
  o.strict_backend = a.strict_backend;
  if (!a.cuda_options.is_none()) o.backend_options = a.cuda_options.cast<std::vector<std::string>>();
  o.fp8.recipe = optional_argument<std::string>(a.recipe);
  if (const auto data = optional_path(a.calibration_data)) o.fp8.calib_data = data->string();
  o.fp8.calib_images = optional_argument<std::size_t>(a.calibration_images);
  return o;
}

py::dict build(const BuildArguments& a) {
  require(!a.output.empty(), "build needs output (the plan file to write)");
  const Manifest manifest = pipeline::load_validated_manifest(a.manifest, families_dir(a.families));
  const auto config = optional_path(a.config);
  std::vector<NamedPath> inputs = {{"checkpoint", a.checkpoint}, {"the manifest", manifest.path}};
  if (config) inputs.push_back({"config", *config});
  refuse_output_over_inputs({"output", a.output}, inputs);
  const pipeline::BuildOverrides settings = overrides(a);
  py::gil_scoped_release release;
  pipeline::ModelSource source = pipeline::load_model_source(manifest, a.checkpoint, config);
  const BuildOptions options = pipeline::build_options(manifest, settings, source);
  const std::string family = source.input.family;  // a detector family's too
  const BuildResult result = pipeline::build_model(std::move(source), options);
  write_plan(a.output, result.plan);
  pipeline::keep_calibration_cache(settings.fp8, result.plan);
  py::gil_scoped_acquire acquire;
  return py::dict(py::arg("plan") = a.output.string(), py::arg("family") = family,
                  py::arg("layers") = result.plan.graph.live_node_count(),
                  py::arg("precision") = std::string(precision_name(options.precision)),
                  py::arg("batch") = options.batch, py::arg("backend") = options.backend,
                  py::arg("opt_level") = options.opt_level,
                  py::arg("backend_options") = result.plan.info.backend_options,
                  py::arg("fallback_layers") = result.fallback_layers,
                  py::arg("quantization") = to_python(result.plan.info.quantization));
}

// kiln.study's arguments beyond the manifest, as `kiln study` takes them.
struct StudyArguments {
  py::object checkpoint, data, backend, output, variants, families, images, every, rounds, seconds_per_round,
      batch, batches, opt_levels;
  bool force = false;
};

// The manifest's [study] with the arguments that override it (as `kiln study`'s options do).
void apply_overrides(const StudyArguments& a, StudySpec& spec) {
  if (!a.batch.is_none()) spec.batch = a.batch.cast<std::int64_t>();
  if (!a.batches.is_none()) spec.batches = a.batches.cast<std::vector<std::int64_t>>();
  if (!a.opt_levels.is_none()) spec.opt_levels = a.opt_levels.cast<std::vector<std::int64_t>>();
  if (!a.images.is_none()) spec.images = a.images.cast<std::size_t>();
  if (!a.every.is_none()) spec.every = a.every.cast<std::size_t>();
  if (!a.rounds.is_none()) spec.rounds = a.rounds.cast<int>();
  if (!a.seconds_per_round.is_none()) spec.seconds_per_round = a.seconds_per_round.cast<double>();
  if (a.variants.is_none()) return;
  spec.variants.clear();
  for (const auto& text : a.variants.cast<std::vector<std::string>>())
    spec.variants.push_back(parse_study_variant(text));
  require(std::any_of(spec.variants.begin(), spec.variants.end(),
                      [&](const StudyVariant& v) { return v.name == spec.baseline; }),
          "variants must include the baseline '", spec.baseline, "'");
}

// What the folder checks' messages call kiln.study's output and force arguments.
const StudyFolderNames kPythonNames{"output", "force=True"};

// The output folder made ready as `kiln study -o` makes it: never over an input, an earlier report
// replaced only with force.
void prepare_output(const fs::path& out, const StudySpec& spec, const Manifest& manifest,
                    const fs::path& weights, const std::string& images, bool force) {
  std::vector<fs::path> plans;
  for (const StudyVariant& variant : spec.variants) plans.push_back(variant_plan_path(out, variant.name));
  refuse_study_folder_over_inputs(
      out, plans,
      {{"checkpoint", weights},
       {"the manifest", manifest.path},
       {"the config.json beside the checkpoint", weights.parent_path() / "config.json"},
       {"data", images}},
      kPythonNames);
  prepare_study_folder(out, plans, force, kPythonNames);
}

py::object study(const std::string& manifest_argument, const StudyArguments& a) {
  const Manifest manifest = pipeline::load_validated_manifest(manifest_argument, families_dir(a.families));
  StudySpec spec = study_spec_from_manifest(manifest);
  apply_overrides(a, spec);
  const bool demo = a.checkpoint.is_none();
  require(!demo || (spec.demo_checkpoint && spec.demo_data), manifest.path.string(),
          ": give checkpoint and data (this manifest names no study.demo_checkpoint / study.demo_data)");
  const fs::path weights = demo ? *spec.demo_checkpoint : *optional_path(a.checkpoint);
  const std::string images =
      a.data.is_none() ? (demo ? spec.demo_data->string() : "") : py::str(a.data).cast<std::string>();
  require(!images.empty(), "study needs data with a checkpoint (a folder of images or webdataset shards)");
  const std::string target = a.backend.is_none() ? default_backend() : a.backend.cast<std::string>();
  const fs::path out = optional_path(a.output).value_or(fs::path("study-" + manifest.family));
  prepare_output(out, spec, manifest, weights, images, a.force);
  StudyResult result;
  {
    py::gil_scoped_release release;
    pipeline::ModelSource source =
        pipeline::load_model_source(manifest, weights, std::nullopt,
                                    demo ? pipeline::Sha256Pin::kNotThisFile : pipeline::Sha256Pin::kEnforce);
    StudyInputs inputs{
        std::move(source.input), spec,          images,          target, false,       out, demo,
        "kiln.study()",          manifest.path, manifest.hub_id, "",     std::nullopt};
    result = run_study(inputs);
    write_study(out, result);
  }
  return to_python(result.to_json());
}

}  // namespace

void add_build(py::module_& m) {
  m.def(
      "build",
      [](const std::string& manifest, const std::string& checkpoint, const std::string& output,
         const py::object& config, const py::object& precision, const py::object& recipe,
         const py::object& calibration_data, const py::object& calibration_images, const py::object& backend,
         const py::object& batch, const py::object& opt_level, const py::object& families_dir,
         bool strict_backend, const py::object& cuda_options) {
        return build({manifest, checkpoint, output, config, precision, recipe, calibration_data,
                      calibration_images, backend, batch, opt_level, families_dir, strict_backend,
                      cuda_options});
      },
      py::arg("manifest"), py::arg("checkpoint"), py::arg("output"), py::arg("config") = py::none(),
      py::arg("precision") = py::none(), py::arg("recipe") = py::none(),
      py::arg("calibration_data") = py::none(), py::arg("calibration_images") = py::none(),
      py::arg("backend") = py::none(), py::arg("batch") = py::none(), py::arg("opt_level") = py::none(),
      py::arg("families_dir") = py::none(), py::arg("strict_backend") = false,
      py::arg("cuda_options") = py::none(),
      "Builds a plan file as `kiln build` does: `manifest` is a family name, its folder or a manifest.toml;\n"
      "precision 'fp32' | 'fp16' | 'bf16' | 'fp8' | 'int8' (fp8, int8: recipe and calibration_data, a folder "
      "or webdataset shards);\n"
      "cuda_options: ['NAME=VALUE', ...] for the cuda backend (kiln build --help lists them);\n"
      "anything not given comes from the manifest. Returns the build's summary as a dict.");
  m.def(
      "study",
      [](const std::string& manifest, const py::object& checkpoint, const py::object& data,
         const py::object& backend, const py::object& output, const py::object& variants,
         const py::object& families_dir, const py::object& images, const py::object& every,
         const py::object& rounds, const py::object& seconds_per_round, const py::object& batch,
         const py::object& batches, const py::object& opt_levels, bool force) {
        return study(manifest, {checkpoint, data, backend, output, variants, families_dir, images, every,
                                rounds, seconds_per_round, batch, batches, opt_levels, force});
      },
      py::arg("manifest"), py::arg("checkpoint") = py::none(), py::arg("data") = py::none(),
      py::arg("backend") = py::none(), py::arg("output") = py::none(), py::arg("variants") = py::none(),
      py::arg("families_dir") = py::none(), py::arg("images") = py::none(), py::arg("every") = py::none(),
      py::arg("rounds") = py::none(), py::arg("seconds_per_round") = py::none(),
      py::arg("batch") = py::none(), py::arg("batches") = py::none(), py::arg("opt_levels") = py::none(),
      py::arg("force") = false,
      "Runs a family's FP8 study as `kiln study` does (no checkpoint: the manifest's demo), writes its\n"
      "report to `output` (default study-FAMILY) and returns its data (study.json) as dicts. images, every,\n"
      "rounds, seconds_per_round, batch, batches and opt_levels (the speed matrix) override the manifest's\n"
      "[study] values, as `kiln study`'s options do; a folder holding an earlier report is refused unless\n"
      "force=True.");
}

}  // namespace kiln::python
