// kiln inspect: list a checkpoint's tensors, print the graph a family builds from it, or describe a plan.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "graph/printer.h"
#include "io/json_formats.h"
#include "pipeline/model_loading.h"
#include "plan/plan_magic.h"

namespace kiln::cli {

namespace {

struct InspectOptions {
  std::filesystem::path file;
  std::string family;
  std::optional<std::filesystem::path> config;
  std::optional<std::string> json;  // FILE, "-" for stdout
};

void list_tensors(const InspectOptions& options) {
  const SafetensorsFile file = SafetensorsFile::open(options.file);
  std::int64_t elements = 0;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& name : file.names()) {
    const Tensor& tensor = file.tensor(name);
    elements += tensor.numel();
    tensors.push_back(
        {{"name", name}, {"dtype", safetensors_name(tensor.dtype())}, {"shape", tensor.shape()}});
  }
  write_json_report(options.json, {{"format", json_format::kCheckpoint},
                                   {"file", options.file.string()},
                                   {"tensors", tensors},
                                   {"elements", elements},
                                   {"metadata", file.metadata()}});
  if (json_to_stdout(options.json)) return;
  for (const auto& entry : tensors) {
    std::cout << entry["name"].get<std::string>() << "  " << entry["dtype"].get<std::string>() << " "
              << shape_str(entry["shape"].get<Shape>()) << "\n";
  }
  for (const auto& [key, value] : file.metadata()) std::cout << "metadata " << key << " = " << value << "\n";
  std::cout << file.names().size() << " tensors, " << elements << " elements, " << file.file_size()
            << " bytes\n";
}

// A detector's graph for any batch, from its config.json (beside the checkpoint unless --config).
Graph detector_graph(const DetectorInfo& detector, const InspectOptions& options) {
  DetectorModel model = pipeline::load_detector(detector, options.file, options.config, -1);
  if (!json_to_stdout(options.json)) {
    std::cout << "# " << model.unused_keys.size() << " checkpoint tensors unused (the one-to-many head)\n";
  }
  return std::move(model.graph);
}

void print_model(const InspectOptions& options) {
  const DetectorInfo* detector = find_detector(options.family);
  pipeline::LoadedModel model;
  if (detector) {
    model.graph = detector_graph(*detector, options);
  } else {
    model = pipeline::load_model(options.family, options.file, options.config);
  }
  const std::string family = detector ? std::string(detector->name) : std::string(model.family->name);
  std::size_t convolutions = 0;
  for (const auto& node : model.graph.nodes()) convolutions += node.op == OpKind::kConv2d ? 1 : 0;
  if (options.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (const NodeId id : model.graph.topological_order()) {
      const Node& node = model.graph.node(id);
      layers.push_back({{"name", node.name},
                        {"op", op_kind_name(node.op)},
                        {"shape", model.graph.value(node.output).shape}});
    }
    write_json_report(options.json, {{"format", json_format::kGraph},
                                     {"family", family},
                                     {"layers", layers},
                                     {"parameters", model.graph.parameter_count()},
                                     {"convolutions", convolutions}});
    if (json_to_stdout(options.json)) return;
  }
  std::cout << print_graph(model.graph);
  std::cout << model.graph.live_node_count() << " layers (" << convolutions << " convolutions), "
            << model.graph.parameter_count() << " parameters\n";
}

// A stored tactic in one line. The plan's backend data is any JSON, so each field is shown only when it
// has the type kiln writes.
std::string describe_tactic(const nlohmann::json& tactic) {
  if (!tactic.is_object()) return cat("not a tactic record: ", tactic.dump());
  const auto text = [&](const char* key) {
    const auto it = tactic.find(key);
    return it != tactic.end() && it->is_string() ? it->get<std::string>() : std::string("?");
  };
  const auto number = [&](const char* key) {
    const auto it = tactic.find(key);
    return it != tactic.end() && it->is_number() ? cat(it->get<double>()) : std::string("?");
  };
  const auto fused = tactic.find("fused");
  const bool is_fused = fused != tactic.end() && fused->is_boolean() && fused->get<bool>();
  return cat(text("api"), " #", number("algorithm"), is_fused ? " fused epilogue" : " + epilogue kernel",
             ", ", number("us"), " us on ", text("device"));
}

void print_plan(const InspectOptions& options) {
  const auto plan = pipeline::load_plan(options.file);
  const Graph& graph = plan->graph;
  std::map<std::string, std::size_t> by_precision;
  std::size_t fp8_convolutions = 0;
  for (const Node& node : graph.nodes()) {
    if (node.dead) continue;
    ++by_precision[std::string(precision_name(node.precision))];
    fp8_convolutions += node.op == OpKind::kConv2d && node.precision == Precision::kF8 ? 1 : 0;
  }
  const PlanInfo& info = plan->info;
  nlohmann::json report = {{"file", options.file.string()},
                           {"family", info.family},
                           {"backend", info.backend},
                           {"precision", precision_name(info.precision)},
                           {"opt_level", info.opt_level},
                           {"batch", info.batch},
                           {"kiln_version", info.kiln_version},
                           {"checkpoint", info.checkpoint_name},
                           {"checkpoint_sha256", info.checkpoint_sha256},
                           {"passes", info.passes},
                           {"layers", graph.live_node_count()},
                           {"layers_by_precision", by_precision},
                           {"fp8_convolutions", fp8_convolutions},
                           {"parameters", graph.parameter_count()}};
  // The backend's options as the build resolved them (absent on backends without options).
  if (!info.backend_options.empty()) report["backend_options"] = info.backend_options;
  if (!info.quantization.empty()) {
    nlohmann::json summary = info.quantization;
    summary.erase("layers");
    summary.erase("tensors");
    summary.erase("calibration_cache");
    if (summary.contains("auto") && summary["auto"].is_object()) summary["auto"].erase("sensitivity");
    report["quantization"] = summary;
  }
  // The kernels a build for a timing backend (cuda) chose, per layer.
  nlohmann::json tactics = nlohmann::json::object();
  for (const auto& [layer, data] : info.layer_data) {
    if (data.contains("tactic")) tactics[layer] = data["tactic"];
  }
  if (!tactics.empty()) report["tactics"] = tactics;
  report["format"] = json_format::kPlan;
  write_json_report(options.json, report);
  if (json_to_stdout(options.json)) return;
  std::cout << print_graph(graph);
  for (const char* key :
       {"family", "backend", "backend_options", "precision", "opt_level", "batch", "checkpoint", "layers",
        "layers_by_precision", "fp8_convolutions", "parameters", "quantization"}) {
    if (report.contains(key)) std::cout << key << ": " << report[key].dump() << "\n";
  }
  if (tactics.empty()) return;
  std::cout << "tactics: " << tactics.size() << " layers\n";
  for (const auto& [layer, t] : tactics.items())
    std::cout << "  " << layer << ": " << describe_tactic(t) << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "List a checkpoint's tensors, print its graph (--family), or describe a plan file and its graph");
  cmd->add_option("file", options->file, "A .safetensors checkpoint or a plan file (kiln build)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--family", options->family, "Build this family's graph from the checkpoint and print it");
  cmd->add_option("--config", options->config, "timm config.json (default: beside the checkpoint)")
      ->check(CLI::ExistingFile);
  add_json_file_option(*cmd, options->json, "the tensors, graph or plan summary");
  cmd->callback([options, cmd] {
    check_json_target(options->json, {{"the file", options->file}});
    const bool plan = looks_like_plan(options->file);
    refuse_unless(!plan, *cmd, {"--family", "--config"}, "to a checkpoint",
                  options->file.string() + " is a plan file (it carries its family and config)");
    refuse_unless(!options->family.empty(), *cmd, {"--config"}, "with --family",
                  "no --family was given (without it inspect lists the checkpoint's tensors)");
    if (plan) {
      print_plan(*options);
    } else if (options->family.empty()) {
      list_tensors(*options);
    } else {
      print_model(*options);
    }
  });
}

}  // namespace kiln::cli
