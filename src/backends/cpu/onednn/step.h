// What a compiled model runs: a list of steps, each the work of one graph node (or of a convolution with
// the residual add fused into it), including the reorders its inputs need.
#pragma once

#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"

namespace kiln::onednn {

using Call = std::function<void(const dnnl::stream&)>;
using Args = std::unordered_map<int, dnnl::memory>;

struct Step {
  NodeId node = kNoNode;  // the layer the step's time is reported under
  std::vector<Call> calls;
  std::string label;  // what runs, as describe() lists it: "conv nChw16c + sum in place"
};

inline Call primitive_call(dnnl::primitive primitive, Args args) {
  return [primitive = std::move(primitive), args = std::move(args)](const dnnl::stream& stream) {
    primitive.execute(stream, args);
  };
}

}  // namespace kiln::onednn
