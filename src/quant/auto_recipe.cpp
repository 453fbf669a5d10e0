#include "quant/auto_recipe.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "eval/metrics.h"
#include "graph/precision_assignment.h"
#include "quant/fp8_rewrite.h"
#include "backends/backend.h"

namespace kiln {
bool AutoTarget::met_by(double agreement, double logit_error) const {
  return metric == Metric::kAgreement ? agreement >= value : logit_error <= value;
}

AutoTarget parse_auto_target(std::string_view text) {
  const std::size_t equals = text.find('=');
  const std::string_view key = text.substr(0, equals);
  AutoTarget target;
  require(equals != std::string_view::npos && (key == "agreement" || key == "logit-error"), "auto target '",
          text, "': expected agreement=FRACTION or logit-error=VALUE");
  target.metric = key == "agreement" ? AutoTarget::Metric::kAgreement : AutoTarget::Metric::kLogitError;
  const std::string number(text.substr(equals + 1));
  std::size_t used = 0;
  try {
    target.value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == number.size() && used > 0 && std::isfinite(target.value) && target.value >= 0.0,
          "auto target '", text, "': '", number, "' is not a non-negative number");
  require(target.metric != AutoTarget::Metric::kAgreement || target.value <= 1.0, "auto target '", text,
          "': agreement is a fraction in [0, 1]");
  return target;
}

std::string auto_target_str(const AutoTarget& target) {
  return cat(target.metric == AutoTarget::Metric::kAgreement ? "agreement>=" : "logit-error<=", target.value);
}

GraphComparer::GraphComparer(const Graph& fp32_graph, std::vector<Tensor> images, std::string backend,
                             int threads)
    : images_(std::move(images)), backend_(std::move(backend)), threads_(threads) {
  require(!images_.empty(), "comparing graphs needs at least one image");
  reference_ = run(fp32_graph);
}

std::vector<Tensor> GraphComparer::run(const Graph& graph) const {
  CompileOptions options;
  options.batch = 1;
  options.threads = threads_;
  Graph runnable = graph;
  widen_constants_to_f32(runnable);
  const auto model = make_backend(backend_)->compile(runnable, options);
  std::vector<Tensor> logits;
  for (const Tensor& image : images_) logits.push_back(model->run({image}).at(0));
  return logits;
}

OutputError GraphComparer::compare(const Graph& candidate) const {
  const std::vector<Tensor> logits = run(candidate);
  ReferenceMetrics metrics;
  for (std::size_t i = 0; i < logits.size(); ++i) metrics.add(logits[i].f32(), reference_[i].f32());
  return {metrics.relative_error(), metrics.agreement()};
}

Graph fp8_graph(const Graph& fp32_graph, const std::vector<std::string>& layers,
                const ActivationScales& scales, bool per_channel_weights, Precision fallback,
                QuantFormat format) {
  Graph graph = fp32_graph;
  rewrite_to_fp8(graph, layers, scales, per_channel_weights, format);
  assign_precision(graph, fallback);
  graph.compact();
  return graph;
}

AutoSearchResult search_auto_recipe(const AutoSearchInput& input, const GraphComparer& comparer) {
  require(input.graph != nullptr && input.scales != nullptr, "auto recipe: missing graph or scales");
  require(!input.candidates.empty(), "auto recipe: no convolution can run in FP8");
  AutoSearchResult result;
  {
    Progress progress("sensitivity", input.candidates.size());
    for (const std::string& layer : input.candidates) {
      const Graph one = fp8_graph(*input.graph, {layer}, *input.scales, input.per_channel_weights,
                                  input.fallback, input.format);
      result.sensitivity.push_back({layer, comparer.compare(one)});
      progress.advance();
    }
    progress.finish();
  }
  std::stable_sort(result.sensitivity.begin(), result.sensitivity.end(),
                   [](const auto& a, const auto& b) { return a.error.logit_error > b.error.logit_error; });

  // The candidates in execution order, less the `kept` most sensitive.
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < result.sensitivity.size(); ++i) rank[result.sensitivity[i].layer] = i;
  const auto fp8_keeping = [&](std::size_t kept) {
    std::vector<std::string> fp8;
    for (const std::string& layer : input.candidates) {
      if (rank.at(layer) >= kept) fp8.push_back(layer);
    }
    return fp8;
  };

  const std::size_t n = input.candidates.size();
  const auto evaluate = [&](std::size_t kept) {
    for (const auto& point : result.curve) {
      if (point.kept == kept) return point.meets;
    }
    const OutputError error =
        comparer.compare(fp8_graph(*input.graph, fp8_keeping(kept), *input.scales, input.per_channel_weights,
                                   input.fallback, input.format));
    const bool meets = input.target.met_by(error.agreement, error.logit_error);
    result.curve.push_back({kept, error, meets});
    return meets;
  };

  // Doubling finds a bracket (low fails, high meets); bisection narrows it to adjacent counts.
  std::size_t low = 0, high = 0;
  if (!evaluate(0)) {
    high = 1;
    while (high < n && !evaluate(high)) {
      low = high;
      high = std::min(n, high * 2);
    }
    if (high == n && !evaluate(n)) {
      const auto& last = result.curve.back().error;
      fail("auto recipe: the target ", auto_target_str(input.target),
           " is not met even with every convolution out of FP8 (logit error ", last.logit_error,
           ", agreement ", last.agreement, ")");
    }
    while (high - low > 1) {
      const std::size_t middle = low + (high - low) / 2;
      (evaluate(middle) ? high : low) = middle;
    }
  }
  result.kept = high;
  std::sort(result.curve.begin(), result.curve.end(),
            [](const auto& a, const auto& b) { return a.kept < b.kept; });
  result.fp8_layers = fp8_keeping(result.kept);
  return result;
}

nlohmann::json AutoSearchResult::to_json(const AutoTarget& target) const {
  nlohmann::json out = {{"target", auto_target_str(target)}, {"kept_out_of_fp8", kept}};
  for (const auto& s : sensitivity) {
    out["sensitivity"].push_back(
        {{"layer", s.layer}, {"logit_error", s.error.logit_error}, {"agreement", s.error.agreement}});
  }
  for (const auto& p : curve) {
    out["curve"].push_back({{"kept", p.kept},
                            {"logit_error", p.error.logit_error},
                            {"agreement", p.error.agreement},
                            {"meets_target", p.meets}});
  }
  return out;
}

}  // namespace kiln
