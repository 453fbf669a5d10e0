// A graph compiled on a backend that does not run all of it: the nodes it does not support run on a
// fallback backend (the CPU), each maximal run of one backend's nodes compiled as a segment of its own
// (runtime/partition.h), the segments run in order and the values crossing between them handed over
// as f32 host tensors. Those hand-overs are the copies describe() names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/partition.h"

namespace kiln {

struct FallbackCompile {
  std::unique_ptr<CompiledModel> model;
  std::vector<std::string> fallback_layers;  // the nodes run on the fallback, in graph order
};

// Compiles `graph` on `backend`. A graph the backend supports entirely is compiled by it alone, as
// is every graph when `backend` is `fallback` (which runs every operator). Otherwise, with
// options.strict_backend the compile fails naming the first unsupported node, its operator and the
// backend's reason; without it the graph is partitioned (PartitionedModel).
FallbackCompile compile_with_fallback(const Graph& graph, const Backend& backend, const Backend& fallback,
                                      const CompileOptions& options);

// Per node id: 0 where `backend` runs the node, 1 where the fallback does. Starts from supports() on
// the whole graph, then repeats it on each segment's own graph (a node can depend on what surrounds
// it: an FP8 convolution needs its quantize point beside it) until every segment is supported; a node
// computing from constants only runs on the fallback when a node reading it does.
std::vector<int> place_on_backend(const Graph& graph, const Backend& backend);

class PartitionedModel final : public CompiledModel {
 public:
  struct Part {
    Segment segment;
    std::string backend;
    std::unique_ptr<CompiledModel> model;
  };
  PartitionedModel(const Graph& graph, std::vector<Part> parts);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  // The segments' profiles one after the other (the hand-overs between them are not timed).
  std::vector<LayerTime> last_profile() const override;
  std::string describe() const override;
  std::map<std::string, nlohmann::json> layer_data() const override;

 private:
  std::vector<Part> parts_;
  std::vector<ValueId> inputs_;           // the whole graph's inputs
  std::vector<ValueId> outputs_;          // and outputs
  std::vector<Tensor> constant_outputs_;  // per output: its tensor when it is a constant
};

}  // namespace kiln
