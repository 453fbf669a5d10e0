#include "eval/layer_errors.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "graph/precision_assignment.h"
#include "runtime/engine.h"
#include "runtime/partitioned_model.h"

namespace kiln {

LayerTap::LayerTap(const Plan& plan, const std::string& backend, std::int64_t batch) : batch_(batch) {
  require(batch > 0, "per-layer outputs need a positive batch, got ", batch);
  Graph graph = plan.graph;
  widen_constants_to_f32(graph);
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kQuantize || node.op == OpKind::kDequantize) continue;
    const auto& outputs = graph.outputs();
    const auto found = std::find(outputs.begin(), outputs.end(), node.output);
    const auto index = static_cast<std::size_t>(found - outputs.begin());
    if (found == outputs.end()) graph.mark_output(node.output);
    Shape shape = graph.value(node.output).shape;
    if (!shape.empty()) shape[0] = batch;
    layers_.push_back({node.name, node.op, std::move(shape), index});
  }
  CompileOptions options;
  options.batch = batch;
  // Layers the backend cannot run are tapped on the CPU fallback, as the engine under test runs them.
  compiled_ =
      compile_with_fallback(graph, *make_backend(backend), *make_backend(default_backend()), options).model;
}

std::vector<Tensor> LayerTap::run(const Tensor& input) {
  require(input.rank() == 4 && input.dim(0) == batch_, "per-layer outputs are compiled for batches of ",
          batch_, " images, got an input of shape ", shape_str(input.shape()));
  return compiled_->run({input});
}

LayerErrorAccumulator::LayerErrorAccumulator(const LayerTap& plan, const LayerTap& reference)
    : plan_(plan), reference_(reference) {
  require(plan.batch() == reference.batch(), "per-layer comparison of batches ", plan.batch(), " and ",
          reference.batch());
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < reference.layers().size(); ++i) by_name.emplace(reference.layers()[i].name, i);
  for (std::size_t i = 0; i < plan.layers().size(); ++i) {
    const auto& layer = plan.layers()[i];
    const auto found = by_name.find(layer.name);
    if (found == by_name.end()) {
      unmatched_.push_back(layer.name);
    } else if (reference.layers()[found->second].shape != layer.shape) {
      shape_mismatch_.push_back(layer.name);
    } else {
      Match match;
      match.plan_layer = i;
      match.reference_layer = found->second;
      matches_.push_back(match);
    }
  }
}

void LayerErrorAccumulator::add(const std::vector<Tensor>& plan_outputs,
                                const std::vector<Tensor>& reference_outputs) {
  for (Match& match : matches_) {
    const auto& layer = plan_.layers()[match.plan_layer];
    const Tensor& y = plan_outputs.at(plan_.layers()[match.plan_layer].output);
    const Tensor& ref = reference_outputs.at(reference_.layers()[match.reference_layer].output);
    require(y.numel() == ref.numel() && y.numel() == shape_numel(layer.shape), "layer '", layer.name,
            "': outputs of ", shape_str(y.shape()), " and ", shape_str(ref.shape()),
            " do not match its shape ", shape_str(layer.shape));
    const auto a = y.f32();
    const auto b = ref.f32();
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
      match.sum_sq_diff += d * d;
      match.sum_sq_ref += static_cast<double>(b[i]) * b[i];
      if (error_greater(std::fabs(d), match.max_abs)) match.max_abs = std::fabs(d);
    }
    match.non_finite += count_non_finite(a);
    match.reference_non_finite += count_non_finite(b);
  }
  images_ += static_cast<std::size_t>(plan_.batch());
}

LayerErrorReport LayerErrorAccumulator::report() const {
  LayerErrorReport report;
  report.images = images_;
  report.plan_layers = plan_.layers().size();
  report.reference_layers = reference_.layers().size();
  report.unmatched = unmatched_;
  report.shape_mismatch = shape_mismatch_;
  for (const Match& match : matches_) {
    const auto& layer = plan_.layers()[match.plan_layer];
    LayerError error;
    error.name = layer.name;
    error.op = layer.op;
    error.shape = layer.shape;
    if (!error.shape.empty()) error.shape[0] = 1;
    error.position = match.plan_layer;
    error.relative_error = relative_error_from_sums(match.sum_sq_diff, match.sum_sq_ref);
    error.max_abs_error = match.max_abs;
    error.non_finite = match.non_finite;
    error.reference_non_finite = match.reference_non_finite;
    report.layers.push_back(std::move(error));
  }
  std::stable_sort(report.layers.begin(), report.layers.end(), [](const LayerError& a, const LayerError& b) {
    if (error_greater(a.relative_error, b.relative_error)) return true;
    if (error_greater(b.relative_error, a.relative_error)) return false;
    return a.position < b.position;
  });
  return report;
}

NonFiniteLayers find_non_finite_layers(const LayerTap& tap, const std::vector<Tensor>& outputs) {
  NonFiniteLayers found;
  for (const auto& layer : tap.layers()) {
    if (count_non_finite(outputs.at(layer.output).f32()).total() == 0) continue;
    if (found.count == 0) found.first = layer.name;
    ++found.count;
  }
  return found;
}

}  // namespace kiln
