// Per-layer errors: where in the network an engine's accuracy goes. Both plans are compiled with every
// live layer's output exposed as an extra graph output; their outputs are matched by layer name (the
// checkpoint's module path) and compared.
//
// Exposing a layer's output keeps a backend from fusing that layer into its reader, so a tap can round
// slightly differently from an engine of the same plan (fp32 fusions only; narrower layers are never
// fused). Layers present in only one plan (FP8 quantize / dequantize points, nodes a pass removed or fused)
// and layers whose output shapes differ are not compared; the report says how many were.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eval/metrics.h"
#include "plan/plan.h"
#include "backends/backend.h"

namespace kiln {

// A plan compiled on a backend with every live node's output returned (batch fixed at compile time).
// Quantize and dequantize nodes are not exposed: they have no fp32 counterpart and backends fuse them
// into the layer they feed.
class LayerTap {
 public:
  struct Layer {
    std::string name;
    OpKind op;
    Shape shape;         // with the compiled batch
    std::size_t output;  // index into run()'s result
  };

  LayerTap(const Plan& plan, const std::string& backend, std::int64_t batch = 1);

  // Layers in topological order.
  const std::vector<Layer>& layers() const { return layers_; }
  std::int64_t batch() const { return batch_; }
  // One [batch, 3, H, W] input; every graph output (the plan's own first, then the exposed layers).
  std::vector<Tensor> run(const Tensor& input);

 private:
  std::vector<Layer> layers_;
  std::int64_t batch_;
  std::unique_ptr<CompiledModel> compiled_;
};

struct LayerError {
  std::string name;
  OpKind op = OpKind::kConv2d;
  Shape shape;                  // one image's output shape, batch 1
  std::size_t position = 0;     // in the plan's topological order
  double relative_error = 0.0;  // ||y - ref|| / ||ref|| over all compared images
  double max_abs_error = 0.0;
  NonFiniteCount non_finite;            // in the plan's output
  NonFiniteCount reference_non_finite;  // in the reference's output
};

struct LayerErrorReport {
  std::vector<LayerError> layers;  // sorted by relative error, largest (or NaN) first
  std::size_t images = 0;
  std::size_t plan_layers = 0;              // layers the plan exposes
  std::size_t reference_layers = 0;         // layers the reference exposes
  std::vector<std::string> unmatched;       // plan layers with no reference layer of that name
  std::vector<std::string> shape_mismatch;  // matched by name, different shapes
};

// Accumulates per-layer errors over images run through both taps.
class LayerErrorAccumulator {
 public:
  LayerErrorAccumulator(const LayerTap& plan, const LayerTap& reference);
  // The outputs of plan.run(x) and reference.run(x) for the same input.
  void add(const std::vector<Tensor>& plan_outputs, const std::vector<Tensor>& reference_outputs);
  LayerErrorReport report() const;

 private:
  struct Match {
    std::size_t plan_layer = 0;
    std::size_t reference_layer = 0;
    double sum_sq_diff = 0.0;
    double sum_sq_ref = 0.0;
    double max_abs = 0.0;
    NonFiniteCount non_finite;
    NonFiniteCount reference_non_finite;
  };
  const LayerTap& plan_;
  const LayerTap& reference_;
  std::vector<Match> matches_;
  std::vector<std::string> unmatched_;
  std::vector<std::string> shape_mismatch_;
  std::size_t images_ = 0;
};

// The first exposed layer, in topological order, whose output holds a NaN or infinity in `outputs` (of
// tap.run()), and how many exposed layers do.
struct NonFiniteLayers {
  std::string first;  // empty when every output is finite
  std::size_t count = 0;
};
NonFiniteLayers find_non_finite_layers(const LayerTap& tap, const std::vector<Tensor>& outputs);

}  // namespace kiln
