// kiln.build (a manifest or family and a checkpoint into a plan file) and kiln.study, through the
// pipeline the kiln command uses.
#include <pybind11/stl.h>

#include "builder/build_plan.h"
#include "io/output_guard.h"
#include "manifest/manifest_location.h"
#include "pipeline/build_settings.h"
#include "pipeline/model_source.h"
#include "plan/plan_writer.h"
#include "py_module.h"
#include "runtime/engine.h"
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
};

pipeline::BuildOverrides overrides(const BuildArguments& a) {
  pipeline::BuildOverrides o;
  if (const auto name = optional_argument<std::string>(a.precision)) {
    const auto precision = precision_from_name(*name);
    require(precision.has_value(), "precision: expected fp32, fp16 or fp8, got '", *name, "'");
    o.precision = *precision;
  }
  o.backend = optional_argument<std::string>(a.backend);
  o.batch = optional_argument<std::int64_t>(a.batch);
  o.opt_level = optional_argument<std::int64_t>(a.opt_level);
  o.strict_backend = a.strict_backend;
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
  const BuildOptions options = pipeline::build_options(manifest, settings, source.input);
  const std::string family(source.family->name);
  const BuildResult result = build_plan(std::move(source.input), options);
  write_plan(a.output, result.plan);
  py::gil_scoped_acquire acquire;
  return py::dict(py::arg("plan") = a.output.string(), py::arg("family") = family,
                  py::arg("layers") = result.plan.graph.live_node_count(),
                  py::arg("precision") = std::string(precision_name(options.precision)),
                  py::arg("batch") = options.batch, py::arg("backend") = options.backend,
                  py::arg("opt_level") = options.opt_level,
                  py::arg("fallback_layers") = result.fallback_layers,
                  py::arg("quantization") = to_python(result.plan.info.quantization));
}

py::object study(const std::string& manifest_argument, const py::object& checkpoint, const py::object& data,
                 const py::object& backend, const py::object& output, const py::object& variants,
                 const py::object& families) {
  const Manifest manifest = pipeline::load_validated_manifest(manifest_argument, families_dir(families));
  StudySpec spec = study_spec_from_manifest(manifest);
  if (!variants.is_none()) {
    spec.variants.clear();
    for (const auto& text : variants.cast<std::vector<std::string>>())
      spec.variants.push_back(parse_study_variant(text));
  }
  const bool demo = checkpoint.is_none();
  require(!demo || (spec.demo_checkpoint && spec.demo_data), manifest.path.string(),
          ": give checkpoint and data (this manifest names no study.demo_checkpoint / study.demo_data)");
  const fs::path weights = demo ? *spec.demo_checkpoint : *optional_path(checkpoint);
  const std::string images =
      data.is_none() ? (demo ? spec.demo_data->string() : "") : py::str(data).cast<std::string>();
  require(!images.empty(), "study needs data with a checkpoint (a folder of images or webdataset shards)");
  const std::string target = backend.is_none() ? default_backend() : backend.cast<std::string>();
  const fs::path out = optional_path(output).value_or(fs::path("study-" + manifest.family));
  StudyResult result;
  {
    py::gil_scoped_release release;
    pipeline::ModelSource source =
        pipeline::load_model_source(manifest, weights, std::nullopt,
                                    demo ? pipeline::Sha256Pin::kNotThisFile : pipeline::Sha256Pin::kEnforce);
    StudyInputs inputs{std::move(source.input), spec,         images, target, false, out, demo,
                       "kiln.study()",          manifest.path, manifest.hub_id, "", std::nullopt};
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
         bool strict_backend) {
        return build({manifest, checkpoint, output, config, precision, recipe, calibration_data,
                      calibration_images, backend, batch, opt_level, families_dir, strict_backend});
      },
      py::arg("manifest"), py::arg("checkpoint"), py::arg("output"), py::arg("config") = py::none(),
      py::arg("precision") = py::none(), py::arg("recipe") = py::none(),
      py::arg("calibration_data") = py::none(), py::arg("calibration_images") = py::none(),
      py::arg("backend") = py::none(), py::arg("batch") = py::none(), py::arg("opt_level") = py::none(),
      py::arg("families_dir") = py::none(), py::arg("strict_backend") = false,
      "Builds a plan file as `kiln build` does: `manifest` is a family name, its folder or a manifest.toml;\n"
      "precision 'fp32' | 'fp16' | 'fp8' (fp8: recipe and calibration_data, a folder or webdataset shards);\n"
      "anything not given comes from the manifest. Returns the build's summary as a dict.");
  m.def("study", &study, py::arg("manifest"), py::arg("checkpoint") = py::none(),
        py::arg("data") = py::none(), py::arg("backend") = py::none(), py::arg("output") = py::none(),
        py::arg("variants") = py::none(), py::arg("families_dir") = py::none(),
        "Runs a family's FP8 study as `kiln study` does (no checkpoint: the manifest's demo), writes its "
        "report\n"
        "to `output` (default study-FAMILY) and returns its data (study.json) as dicts.");
}

}  // namespace kiln::python
