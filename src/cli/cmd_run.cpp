// kiln run: classify images or .npy batches with a plan file, or straight from a checkpoint; detect
// objects with a detector family's checkpoint.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "eval/top_k.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "io/npy.h"
#include "io/output_guard.h"
#include "pipeline/detector_engine.h"
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
};

// Where the drawing of input `index` of `count` goes: the path itself for one input, else name_<index>.png.
std::filesystem::path drawing_path(const std::filesystem::path& path, std::size_t index, std::size_t count) {
  if (count == 1) return path;
  return path.parent_path() / cat(path.stem().string(), "_", index, path.extension().string());
}

void draw_box(Image& image, const Detection& d) {
  // A colour per class, bright enough on photos; two pixels wide, clipped to the image.
  const std::uint8_t colour[3] = {static_cast<std::uint8_t>(64 + (d.label * 97) % 192),
                                  static_cast<std::uint8_t>(64 + (d.label * 57 + 80) % 192),
                                  static_cast<std::uint8_t>(64 + (d.label * 151 + 160) % 192)};
  const auto clampi = [](double v, std::int64_t hi) {
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::lround(v)), 0, hi - 1);
  };
  const std::int64_t x1 = clampi(d.x1, image.width), x2 = clampi(d.x2, image.width);
  const std::int64_t y1 = clampi(d.y1, image.height), y2 = clampi(d.y2, image.height);
  const auto put = [&](std::int64_t x, std::int64_t y) {
    if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
    std::copy_n(colour, 3, image.rgb.begin() + (y * image.width + x) * 3);
  };
  for (std::int64_t t = 0; t < 2; ++t) {
    for (std::int64_t x = x1; x <= x2; ++x) {
      put(x, y1 + t);
      put(x, y2 - t);
    }
    for (std::int64_t y = y1; y <= y2; ++y) {
      put(x1 + t, y);
      put(x2 - t, y);
    }
  }
}

void run_detector(const DetectorInfo& detector, const RunOptions& options) {
  require(options.plan.empty() && !options.checkpoint.empty(), "--family ", detector.name,
          " runs a checkpoint: give --checkpoint (detectors have no plan files yet)");
  const std::vector<Image> images = pipeline::load_detector_images(options.inputs);
  const auto batch = static_cast<std::int64_t>(images.size());
  CompileOptions compile;
  compile.strict_backend = options.strict_backend;
  pipeline::DetectorEngine engine(detector, options.checkpoint, options.config, batch, options.backend,
                                  compile);
  if (!engine.engine().fallback_layers().empty()) std::cerr << fallback_warning(engine.engine()) << "\n";
  const pipeline::DetectorRun run = engine.detect(images);
  if (options.save_output) write_npy(*options.save_output, run.decoded);
  const YoloConfig& config = engine.config();
  const std::int64_t size = config.imgsz;
  const std::string& backend = engine.backend();
  const double seconds = run.seconds;

  std::cout << detector.name << " (" << config.model << ", " << size << "x" << size << ") on " << batch
            << " image(s), " << backend << ", " << std::fixed << std::setprecision(1) << seconds * 1000.0
            << " ms; " << engine.unused_keys().size()
            << " checkpoint tensors unused (the one-to-many head)\n";
  nlohmann::json report = {{"family", detector.name},
                           {"model", options.checkpoint.string()},
                           {"backend", backend},
                           {"seconds", seconds},
                           {"min_score", options.min_score},
                           {"unused_keys", engine.unused_keys()},
                           {"results", nlohmann::json::array()}};
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::cout << options.inputs[i].string() << " (" << images[i].width << "x" << images[i].height << ")\n";
    nlohmann::json found = nlohmann::json::array();
    Image drawing = images[i];
    for (const Detection& d : run.detections[i]) {
      if (d.score < options.min_score) continue;
      const auto label = static_cast<std::size_t>(d.label);
      const std::string name = label < config.names.size() ? config.names[label] : cat("class ", label);
      std::cout << "  " << std::setprecision(3) << d.score << "  " << name << " (" << d.label << ")  ["
                << std::setprecision(1) << d.x1 << ", " << d.y1 << ", " << d.x2 << ", " << d.y2 << "]\n";
      found.push_back(
          {{"label", d.label}, {"name", name}, {"score", d.score}, {"box", {d.x1, d.y1, d.x2, d.y2}}});
      draw_box(drawing, d);
    }
    if (found.empty())
      std::cout << "  no detection scores " << number_text(options.min_score) << " or more\n";
    report["results"].push_back({{"input", options.inputs[i].string()}, {"detections", found}});
    if (options.draw) write_png(drawing_path(*options.draw, i, images.size()), drawing);
  }
  if (options.json) {
    write_file_atomically(*options.json, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
  }
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
  const bool detector = find_detector(options.family) != nullptr;
  refuse_unless(!detector, command, {"--topk"}, "to classifiers", "--family " + options.family + " detects");
  refuse_unless(detector, command, {"--min-score", "--draw"}, "to detector families (--family yolov10)",
                options.plan.empty() ? "--family " + options.family + " classifies" : "a plan classifies");
  if (!options.tactic_cache.empty()) {
    const std::string backend = options.backend.empty() ? default_backend() : options.backend;
    refuse_unless(make_backend(backend)->chooses_tactics(), command, {"--tactic-cache"},
                  "to a backend that times kernels (cuda)", "the backend is " + backend);
  }
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
    refuse_output_over_inputs(*output, inputs);
    inputs.push_back(*output);
  }
}

void run(const RunOptions& options, const CLI::App& command) {
  refuse_outputs_over_inputs(options);
  check_model_options(options, command);
  if (const DetectorInfo* detector = find_detector(options.family)) return run_detector(*detector, options);
  std::shared_ptr<const Plan> plan = options.plan.empty()
                                         ? std::make_shared<const Plan>(pipeline::build_in_memory(
                                               options.family, options.checkpoint, options.config))
                                         : pipeline::load_plan(options.plan);
  const pipeline::InputBatch batch = pipeline::load_inputs(options.inputs, plan->config.preprocess);
  CompileOptions compile;
  compile.batch = batch.tensor.dim(0);
  compile.tactic_cache = options.tactic_cache;
  compile.strict_backend = options.strict_backend;
  Engine engine(plan, options.backend.empty() ? default_backend() : options.backend, compile);
  if (!engine.fallback_layers().empty()) std::cerr << fallback_warning(engine) << "\n";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = engine.run(batch.tensor);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Tensor& logits = outputs.at(0);
  if (options.save_output) write_npy(*options.save_output, logits);

  const std::vector<std::string> names = pipeline::class_names(plan->config);
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  nlohmann::json report = {
      {"family", plan->info.family},
      {"model", options.plan.empty() ? options.checkpoint.string() : options.plan.string()},
      {"backend", engine.backend()},
      {"batch", logits.dim(0)},
      {"seconds", seconds},
      {"results", nlohmann::json::array()}};
  std::cout << plan->info.family << " on " << batch.labels.size() << " input(s), " << engine.backend() << ", "
            << std::fixed << std::setprecision(1) << seconds * 1000.0 << " ms\n";
  for (std::size_t row = 0; row < batch.labels.size(); ++row) {
    const auto ranked =
        top_k_classes(logits.f32().subspan(row * classes, classes), static_cast<std::size_t>(options.topk));
    std::cout << batch.labels[row] << "\n";
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
    report["results"].push_back({{"input", batch.labels[row]}, {"top", entries}});
  }
  if (options.json) {
    write_file_atomically(*options.json, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Classify images or .npy batches with a plan file (kiln build) or a checkpoint with --family; detect "
      "objects with --family yolov10");
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
  cmd->add_option("--input", options->inputs,
                  "Images (JPEG/PNG, preprocessed as timm would) or .npy NCHW float32 batches")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", options->backend,
                  "Backend to run on (default: the fastest CPU backend built in)");
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
  cmd->callback([options, cmd] { run(*options, *cmd); });
}

}  // namespace kiln::cli
