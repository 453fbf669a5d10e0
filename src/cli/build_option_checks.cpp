#include "cli/build_option_checks.h"

#include "cli/option_checks.h"
#include "runtime/engine.h"

namespace kiln::cli {

namespace {

// "--precision fp16 was given" or "the manifest's precision is fp16 (give --precision fp8)".
std::string source_of(const std::optional<std::string>& given, const std::string& option,
                      const std::string& value, const std::string& wanted) {
  if (given) return option + " " + *given + " was given";
  return "the manifest's " + option.substr(2) + " is " + value + " (give " + option + " " + wanted + ")";
}

void check_fp8_settings(const CLI::App& command, const BuildChoices& choices) {
  const pipeline::Fp8Options& fp8 = *choices.fp8;
  const QuantizationSettings defaults = choices.manifest->quantization.value_or(QuantizationSettings{});
  const std::string recipe = fp8.recipe.value_or(defaults.recipe.empty() ? "all" : defaults.recipe);
  refuse_unless(recipe == "auto", command, {"--auto-target", "--sensitivity-images"}, "to --recipe auto",
                fp8.recipe ? "--recipe " + recipe + " was given"
                           : "the manifest's recipe is " + recipe + " (give --recipe auto)");
  refuse_unless(recipe != "auto", command, {"--quantize-residuals"}, "to a recipe other than auto",
                "--recipe auto's search compares plans without it");
  const std::string method =
      fp8.calib_method.value_or(std::string(calibration_method_name(defaults.calibration)));
  refuse_unless(method == "percentile", command, {"--percentile"}, "to --calib-method percentile",
                source_of(fp8.calib_method, "--calib-method", method, "percentile"));
  refuse_unless(fp8.calib_data.has_value(), command, {"--images", "--every", "--strict"}, "with --calib",
                "no --calib was given (the scales come from --calib-cache)");
}

// --cuda-option only for the cuda backend, each NAME=VALUE one the backend takes (a usage error naming
// the option and its values otherwise).
void check_cuda_options(const CLI::App& command, const BuildChoices& choices, const std::string& backend) {
  if (choices.cuda_options == nullptr || choices.cuda_options->empty()) return;
  refuse_unless(backend_takes_options(backend), command, {"--cuda-option"}, "to --backend cuda",
                choices.backend ? "--backend " + backend + " was given"
                                : "the manifest's backend is " + backend + " (give --backend cuda)");
  resolved_cuda_options(*choices.cuda_options, backend);
}

}  // namespace

void check_build_options(const CLI::App& command, const BuildChoices& choices) {
  const Manifest& manifest = *choices.manifest;
  const std::string precision = choices.precision.value_or(std::string(precision_name(manifest.precision)));
  const bool quantized = precision == "fp8" || precision == "int8";
  refuse_unless(
      quantized, command,
      {"--recipe", "--calib", "--images", "--every", "--calib-method", "--calib-cache", "--percentile",
       "--fp8-fallback", "--auto-target", "--sensitivity-images", "--strict", "--quantize-residuals"},
      "to --precision fp8 or int8", source_of(choices.precision, "--precision", precision, "fp8"));
  refuse_unless(quantized, command, {"--strict-precision"}, "to --precision fp8 or int8",
                source_of(choices.precision, "--precision", precision, "fp8"));
  // FP8 engines (cuDNN, kiln's Hopper kernel) take one input scale per tensor.
  refuse_unless(precision == "int8", command, {"--depthwise-input-scales"}, "to --precision int8",
                source_of(choices.precision, "--precision", precision, "int8"));
  if (quantized) check_fp8_settings(command, choices);
  const std::int64_t opt_level = choices.opt_level.value_or(manifest.opt_level);
  refuse_unless(opt_level > 0, command, {"--disable-pass"}, "with --opt-level 1 or more",
                choices.opt_level ? "--opt-level 0 (no graph pass) was given"
                                  : "the manifest's opt_level is 0 (no graph pass)");
  const std::string backend = choices.backend.value_or(manifest.backends.front());
  check_cuda_options(command, choices, backend);
  // Precisions are chosen per layer only where kernels are timed (opt level 1 and above).
  refuse_unless(opt_level > 0, command, {"--strict-precision"}, "with --opt-level 1 or more",
                "at --opt-level 0 no kernel is timed and every FP8 layer stays FP8");
  if (first_given(command, {"--tactic-cache", "--strict-precision"}).empty()) return;
  refuse_unless(make_backend(backend)->chooses_tactics(), command, {"--tactic-cache", "--strict-precision"},
                "to a backend that times kernels (cuda)",
                choices.backend ? "--backend " + backend + " was given"
                                : "the manifest's backend is " + backend + " (give --backend cuda)");
}

void check_list_passes_alone(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_name() == "--list-passes") continue;
    usage_error("--list-passes prints the graph passes and builds nothing, so " + option->get_name() +
                " would be ignored: give it alone");
  }
}

}  // namespace kiln::cli
