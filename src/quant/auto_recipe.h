// The "auto" recipe: choose which convolutions stay out of FP8 from measurements, not names.
//
// 1. Sensitivity: for each candidate layer, quantize that layer alone and measure the output error
//    against the fp32 graph on a few calibration images.
// 2. Search: keep the k most sensitive layers in the fallback precision and the rest in FP8, for k found
//    by doubling then bisection, until the target (top-1 agreement or logit error against fp32) is met.
//    Every k tried is a point of the accuracy-against-layers-kept curve. The search assumes the error
//    falls as k grows, which holds on average but not strictly; the curve shows where it does not.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/progress.h"
#include "graph/graph.h"
#include "quant/activation_scales.h"
#include "quant/quant_format.h"

namespace kiln {

struct AutoTarget {
  enum class Metric { kAgreement, kLogitError };
  Metric metric = Metric::kLogitError;
  double value = 0.05;  // agreement at least this, or logit error at most this
  bool met_by(double agreement, double logit_error) const;
};
// "agreement=0.99" or "logit-error=0.05".
AutoTarget parse_auto_target(std::string_view text);
std::string auto_target_str(const AutoTarget& target);

// Output error of a candidate graph against the fp32 graph's logits over the same images.
struct OutputError {
  double logit_error = 0.0;  // ||y - ref|| / ||ref|| over all images' logits
  double agreement = 0.0;    // fraction of images with the same top-1 class
};

// Runs graphs on a backend over a fixed set of images and compares them with the fp32 graph.
class GraphComparer {
 public:
  GraphComparer(const Graph& fp32_graph, std::vector<Tensor> images, std::string backend, int threads = 0);
  OutputError compare(const Graph& candidate) const;

 private:
  std::vector<Tensor> run(const Graph& graph) const;
  std::vector<Tensor> images_;
  std::string backend_;
  int threads_;
  std::vector<Tensor> reference_;
};

struct AutoSearchInput {
  const Graph* graph = nullptr;                          // fp32, after passes
  std::vector<std::string> candidates;                   // layers that may run in FP8
  const ActivationScales* scales = nullptr;              // activation scales per input tensor
  bool per_channel_weights = true;
  Precision fallback = Precision::kF16;  // what the layers outside FP8 run in
  AutoTarget target;
  QuantFormat format = QuantFormat::kE4M3;  // the quantized layers' grid (int8 searches the same way)
};

struct AutoSearchResult {
  struct Sensitivity {
    std::string layer;
    OutputError error;
  };
  struct CurvePoint {
    std::size_t kept = 0;  // candidates kept out of FP8 (the most sensitive ones)
    OutputError error;
    bool meets = false;
  };
  std::vector<Sensitivity> sensitivity;  // most sensitive first
  std::vector<CurvePoint> curve;         // in order of `kept`
  std::vector<std::string> fp8_layers;   // the chosen recipe, in execution order
  std::size_t kept = 0;
  nlohmann::json to_json(const AutoTarget& target) const;
};

// Fails when the target is not met even with every candidate kept out of FP8.
AutoSearchResult search_auto_recipe(const AutoSearchInput& input, const GraphComparer& comparer);

// The graph as an FP8 (int8) build makes it: `layers` in FP8 (int8) with `scales`, the rest in `fallback`.
Graph fp8_graph(const Graph& fp32_graph, const std::vector<std::string>& layers,
                const ActivationScales& scales, bool per_channel_weights, Precision fallback,
                QuantFormat format = QuantFormat::kE4M3);

}  // namespace kiln
