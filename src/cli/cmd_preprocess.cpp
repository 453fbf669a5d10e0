// kiln preprocess: write the network input kiln makes from images, to compare with other tools.
#include <cctype>
#include <iostream>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/output_checks.h"
#include "core/error.h"
#include "families/registry.h"
#include "io/npy.h"
#include "io/output_guard.h"
#include "pipeline/input_batch.h"

namespace kiln::cli {

namespace {

struct PreprocessOptions {
  std::vector<std::filesystem::path> inputs;
  std::string family = "timm_resnest";
  std::optional<std::filesystem::path> config;
  std::filesystem::path output;
};

// The output is always .npy; a name promising another format (out.png) would hold bytes no image
// viewer reads, so it is refused before any work.
void refuse_other_format(const std::filesystem::path& output) {
  std::string extension = output.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (extension != ".npy") {
    usage_error(cat("-o ", output.string(), ": kiln preprocess writes float32 .npy (name it ",
                    output.stem().string(), ".npy)"));
  }
}

}  // namespace

void add_preprocess_command(CLI::App& app) {
  auto options = std::make_shared<PreprocessOptions>();
  CLI::App* cmd =
      app.add_subcommand("preprocess", "Preprocess images as timm's eval transform and save them as .npy");
  cmd->add_option("--input", options->inputs, "Images (JPEG/PNG)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--family", options->family, "Family whose default preprocessing applies")
      ->capture_default_str();
  cmd->add_option("--config", options->config, "timm config.json whose pretrained_cfg sets the preprocessing")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", options->output, "Output .npy, float32 [N, 3, H, W]")->required();
  cmd->callback([options] {
    std::vector<NamedPath> inputs;
    for (const auto& input : options->inputs) inputs.push_back({"--input", input});
    if (const auto config_path = named_if("--config", options->config)) inputs.push_back(*config_path);
    check_output({"-o", options->output}, inputs);
    refuse_other_format(options->output);
    ModelConfig config = find_family(options->family).default_config;
    if (options->config) config = read_timm_config(*options->config, config);
    // What preprocessing makes of images is finite; a .npy given here is passed through as it is.
    const pipeline::InputBatch batch =
        pipeline::load_inputs(options->inputs, config.preprocess, pipeline::NonFiniteInputs::kAllow);
    write_npy(options->output, batch.tensor);
    std::cout << "wrote " << options->output.string() << " " << shape_str(batch.tensor.shape()) << "\n";
  });
}

}  // namespace kiln::cli
