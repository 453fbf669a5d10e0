// kiln run: classify images or .npy batches with a plan file, or straight from a checkpoint.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "runtime/engine.h"

namespace kiln::cli {

namespace {

struct RunOptions {
  std::filesystem::path plan;
  std::string backend;
  std::string family;
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;
  std::vector<std::filesystem::path> inputs;
  int topk = 5;
  std::optional<std::filesystem::path> save_output;
  std::optional<std::filesystem::path> json;
  std::string tactic_cache;
};

struct Ranked {
  std::int64_t index;
  double probability;
  double logit;
};

std::vector<Ranked> top_k(std::span<const float> logits, int k) {
  const double peak = *std::max_element(logits.begin(), logits.end());
  double total = 0.0;
  for (const float logit : logits) total += std::exp(logit - peak);
  std::vector<std::int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const auto count = std::min<std::size_t>(static_cast<std::size_t>(k), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    [&](std::int64_t a, std::int64_t b) {
                      const auto la = logits[static_cast<std::size_t>(a)];
                      const auto lb = logits[static_cast<std::size_t>(b)];
                      return la != lb ? la > lb : a < b;
                    });
  std::vector<Ranked> ranked;
  for (std::size_t i = 0; i < count; ++i) {
    const double logit = logits[static_cast<std::size_t>(order[i])];
    ranked.push_back({order[i], std::exp(logit - peak) / total, logit});
  }
  return ranked;
}

void run(const RunOptions& options) {
  require(options.plan.empty() != (options.family.empty() && options.checkpoint.empty()),
          "give either a plan file or --family with --checkpoint");
  std::shared_ptr<const Plan> plan =
      options.plan.empty() ? std::make_shared<const Plan>(build_in_memory(options.family, options.checkpoint,
                                                                          options.config))
                           : load_plan(options.plan);
  const InputBatch batch = load_inputs(options.inputs, plan->config.preprocess);
  CompileOptions compile;
  compile.batch = batch.tensor.dim(0);
  compile.tactic_cache = options.tactic_cache;
  Engine engine(plan, options.backend.empty() ? default_backend() : options.backend, compile);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> outputs = engine.run(batch.tensor);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Tensor& logits = outputs.at(0);
  if (options.save_output) write_npy(*options.save_output, logits);

  const std::vector<std::string> names = class_names(plan->config);
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  nlohmann::json report = {{"family", plan->info.family},
                           {"model", options.plan.empty() ? options.checkpoint.string() : options.plan.string()},
                           {"backend", engine.backend()},
                           {"batch", logits.dim(0)},
                           {"seconds", seconds},
                           {"results", nlohmann::json::array()}};
  std::cout << plan->info.family << " on " << batch.labels.size() << " input(s), " << engine.backend() << ", "
            << std::fixed
            << std::setprecision(1) << seconds * 1000.0 << " ms\n";
  for (std::size_t row = 0; row < batch.labels.size(); ++row) {
    const auto ranked = top_k(logits.f32().subspan(row * classes, classes), options.topk);
    std::cout << batch.labels[row] << "\n";
    nlohmann::json entries = nlohmann::json::array();
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto index = static_cast<std::size_t>(ranked[i].index);
      const std::string label = index < names.size() ? names[index] : cat("class ", index);
      std::cout << "  " << i + 1 << ". " << std::setw(6) << std::setprecision(2) << ranked[i].probability * 100.0
                << "%  " << label << " (" << index << ")\n";
      entries.push_back({{"class", index}, {"label", label}, {"probability", ranked[i].probability},
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
      "run", "Classify images or .npy batches with a plan file (kiln build), or a checkpoint with --family");
  cmd->add_option("plan", options->plan, "A plan file; it carries its family, labels and preprocessing")
      ->check(CLI::ExistingFile);
  cmd->add_option("--family", options->family, "Model family, to run a checkpoint directly (timm_resnest, timm_resnet)");
  cmd->add_option("--checkpoint", options->checkpoint, "model.safetensors with timm's key names")
      ->check(CLI::ExistingFile);
  cmd->add_option("--config", options->config,
                  "timm config.json (default: config.json beside the checkpoint, else the family's defaults)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--input", options->inputs,
                  "Images (JPEG/PNG, preprocessed as timm would) or .npy NCHW float32 batches")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", options->backend, "Backend to run on (default: the fastest CPU backend built in)");
  cmd->add_option("--topk", options->topk, "Classes to print per input")->check(CLI::Range(1, 1000));
  cmd->add_option("--save-output", options->save_output, "Write the logits [N, classes] as float32 .npy");
  cmd->add_option("--json", options->json, "Write the top-k results as JSON");
  cmd->add_option("--tactic-cache", options->tactic_cache, "File of timed GPU tactics to reuse and extend (cuda)");
  cmd->callback([options] { run(*options); });
}

}  // namespace kiln::cli
