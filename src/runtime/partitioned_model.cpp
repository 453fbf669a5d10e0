#include "runtime/partitioned_model.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace kiln {
namespace {

constexpr int kOnBackend = 0;
constexpr int kOnFallback = 1;

// A node computing from constants only (an FP8 weight's dequantize) runs where its readers run: on
// the fallback as soon as one of them does, so the backend's segments never read it from the host.
bool follow_readers(const Graph& graph, std::vector<int>& placement) {
  const std::vector<bool> from_constants = computes_from_constants(graph);
  const auto consumers = graph.consumers();
  const auto order = graph.topological_order();
  bool moved = false;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int& where = placement[static_cast<std::size_t>(*it)];
    if (where == kOnFallback || !from_constants[static_cast<std::size_t>(*it)]) continue;
    for (const NodeId reader : consumers[static_cast<std::size_t>(graph.node(*it).output)]) {
      if (placement[static_cast<std::size_t>(reader)] != kOnFallback) continue;
      where = kOnFallback;
      moved = true;
      break;
    }
  }
  return moved;
}

// Fails naming the first node `backend` does not support, its operator and the backend's reason.
void require_supported(const Graph& graph, const Backend& backend, const Backend& fallback) {
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (backend.supports(graph, node)) continue;
    fail("layer '", node.name, "' (", op_kind_name(node.op), ") does not run on the ", backend.name(),
         " backend: ", backend.unsupported_reason(graph, node), " (without --strict-backend it runs on ",
         fallback.name(), ")");
  }
}

std::string plural(std::size_t count, const char* word) {
  return cat(count, " ", word, count == 1 ? "" : "s");
}

}  // namespace

std::vector<int> place_on_backend(const Graph& graph, const Backend& backend) {
  std::vector<int> placement(graph.nodes().size(), kOnBackend);
  for (std::size_t id = 0; id < graph.nodes().size(); ++id) {
    const Node& node = graph.node(static_cast<NodeId>(id));
    if (!node.dead && !backend.supports(graph, node)) placement[id] = kOnFallback;
  }
  if (std::find(placement.begin(), placement.end(), kOnFallback) == placement.end()) return placement;
  for (bool moved = true; moved;) {
    moved = follow_readers(graph, placement);
    for (const Segment& segment : split_graph(graph, placement)) {
      if (segment.placement != kOnBackend) continue;
      for (std::size_t k = 0; k < segment.nodes.size(); ++k) {
        if (backend.supports(segment.graph, segment.graph.node(static_cast<NodeId>(k)))) continue;
        placement[static_cast<std::size_t>(segment.nodes[k])] = kOnFallback;
        moved = true;
      }
    }
  }
  return placement;
}

FallbackCompile compile_with_fallback(const Graph& graph, const Backend& backend, const Backend& fallback,
                                      const CompileOptions& options) {
  FallbackCompile result;
  if (backend.name() == fallback.name()) {
    result.model = backend.compile(graph, options);
    return result;
  }
  if (options.strict_backend) require_supported(graph, backend, fallback);
  const std::vector<int> placement = place_on_backend(graph, backend);
  for (std::size_t id = 0; id < placement.size(); ++id) {
    const Node& node = graph.node(static_cast<NodeId>(id));
    if (!node.dead && placement[id] == kOnFallback) result.fallback_layers.push_back(node.name);
  }
  if (result.fallback_layers.empty()) {
    result.model = backend.compile(graph, options);
    return result;
  }
  std::vector<PartitionedModel::Part> parts;
  for (Segment& segment : split_graph(graph, placement)) {
    const Backend& runner = segment.placement == kOnBackend ? backend : fallback;
    auto model = runner.compile(segment.graph, options);
    parts.push_back({std::move(segment), std::string(runner.name()), std::move(model)});
  }
  result.model = std::make_unique<PartitionedModel>(graph, std::move(parts));
  return result;
}

PartitionedModel::PartitionedModel(const Graph& graph, std::vector<Part> parts)
    : parts_(std::move(parts)), inputs_(graph.inputs()), outputs_(graph.outputs()) {
  for (const ValueId v : outputs_) constant_outputs_.push_back(graph.value(v).constant);
}

std::vector<Tensor> PartitionedModel::run(const std::vector<Tensor>& inputs) {
  require(inputs.size() == inputs_.size(), "this model takes ", inputs_.size(), " inputs, got ",
          inputs.size());
  std::unordered_map<ValueId, Tensor> values;
  for (std::size_t i = 0; i < inputs.size(); ++i) values[inputs_[i]] = inputs[i];
  for (Part& part : parts_) {
    std::vector<Tensor> segment_inputs;
    for (const ValueId v : part.segment.inputs) segment_inputs.push_back(values.at(v));
    std::vector<Tensor> segment_outputs = part.model->run(segment_inputs);
    for (std::size_t i = 0; i < segment_outputs.size(); ++i)
      values[part.segment.outputs[i]] = std::move(segment_outputs[i]);
  }
  std::vector<Tensor> outputs;
  for (std::size_t i = 0; i < outputs_.size(); ++i)
    outputs.push_back(constant_outputs_[i].empty() ? values.at(outputs_[i]) : constant_outputs_[i]);
  return outputs;
}

std::vector<LayerTime> PartitionedModel::last_profile() const {
  std::vector<LayerTime> merged;
  for (const Part& part : parts_) {
    const auto layers = part.model->last_profile();
    merged.insert(merged.end(), layers.begin(), layers.end());
  }
  return merged;
}

std::string PartitionedModel::describe() const {
  std::unordered_map<ValueId, const std::string*> computed_on;
  std::string text = cat("partitioned: ", plural(parts_.size(), "segment"), "\n");
  for (std::size_t s = 0; s < parts_.size(); ++s) {
    const Part& part = parts_[s];
    for (std::size_t i = 0; i < part.segment.inputs.size(); ++i) {
      const auto from = computed_on.find(part.segment.inputs[i]);
      if (from == computed_on.end() || *from->second == part.backend) continue;
      text += cat("copy '", part.segment.graph.value(part.segment.graph.inputs()[i]).name, "' ",
                  *from->second, " -> ", part.backend, "\n");
    }
    text +=
        cat("segment ", s + 1, " on ", part.backend, ": ", plural(part.segment.nodes.size(), "layer"), "\n");
    std::string steps = part.model->describe();
    if (!steps.empty() && steps.back() != '\n') steps += '\n';
    text += steps;
    for (const ValueId v : part.segment.outputs) computed_on[v] = &part.backend;
  }
  return text;
}

std::map<std::string, nlohmann::json> PartitionedModel::layer_data() const {
  std::map<std::string, nlohmann::json> merged;
  for (const Part& part : parts_) merged.merge(part.model->layer_data());
  return merged;
}

}  // namespace kiln
