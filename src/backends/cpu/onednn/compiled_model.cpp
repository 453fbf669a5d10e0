#include "backends/cpu/onednn/compiled_model.h"

#include <chrono>

#include "backends/cpu/onednn/denormals.h"
#include "backends/cpu/onednn/thread_scope.h"
#include "core/error.h"

namespace kiln::onednn {

CompiledProgram::CompiledProgram(const Graph& graph, const CompileOptions& options, Program program)
    : options_(options), program_(std::move(program)), stream_(program_.engine) {
  for (const Node& node : graph.nodes()) {
    node_names_.push_back(node.name);
    node_ops_.push_back(node.op);
  }
}

std::vector<Tensor> CompiledProgram::run(const std::vector<Tensor>& inputs) {
  require(inputs.size() == program_.input_shapes.size(), "expected ", program_.input_shapes.size(),
          " input tensors, got ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    require(inputs[i].dtype() == DType::kF32, "graph inputs must be f32, got ",
            dtype_name(inputs[i].dtype()));
    require(inputs[i].shape() == program_.input_shapes[i], "this model was compiled for input shape ",
            shape_str(program_.input_shapes[i]), ", got ", shape_str(inputs[i].shape()));
  }
  const ThreadScope threads(options_.threads);
  const FlushDenormals flush(omp_get_max_threads());
  RunIo& io = *program_.io;
  io.inputs = &inputs;
  io.outputs.clear();
  for (std::size_t i = 0; i < program_.output_shapes.size(); ++i) {
    io.outputs.emplace_back(DType::kF32, program_.output_shapes[i]);
    program_.output_memories[i].set_data_handle(io.outputs.back().mutable_bytes());
  }

  profile_.clear();
  std::vector<int> entry(node_names_.size(), -1);  // node -> index in profile_
  for (const Step& step : program_.steps) {
    const auto start = std::chrono::steady_clock::now();
    for (const Call& c : step.calls) c(stream_);
    if (!options_.profile || step.node == kNoNode) continue;
    stream_.wait();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    int& index = entry[static_cast<std::size_t>(step.node)];
    if (index < 0) {
      index = static_cast<int>(profile_.size());
      const auto node = static_cast<std::size_t>(step.node);
      profile_.push_back({node_names_[node], node_ops_[node], 0.0});
    }
    profile_[static_cast<std::size_t>(index)].milliseconds += ms;
  }
  stream_.wait();
  io.inputs = nullptr;
  std::vector<Tensor> outputs = std::move(io.outputs);
  io.outputs.clear();
  return outputs;
}

std::string CompiledProgram::describe() const {
  std::string text;
  for (const Step& step : program_.steps) {
    const std::string name = step.node == kNoNode ? "-" : node_names_[static_cast<std::size_t>(step.node)];
    text += cat(name, ": ", step.label, "\n");
  }
  return text + cat("activation arena: ", arena_bytes(), " bytes\n");
}

}  // namespace kiln::onednn
