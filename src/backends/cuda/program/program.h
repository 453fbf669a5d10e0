// A graph compiled for one GPU (built by ProgramBuilder, program_builder.h): every activation at a fixed
// offset of one device arena, cuDNN convolutions and cuBLASLt matmuls with their tactics chosen at compile
// time (or taken from the plan, which stores what its build chose: layer_data()), kiln's kernels for the
// rest, and the whole network captured as one CUDA graph that each run replays. Host runs pass inputs and
// outputs through pinned host buffers; device runs point the graph at the caller's buffers (graph_io.h). With
// CompileOptions::profile the steps run one by one instead (no CUDA graph), and after each run every step is
// timed alone (captured into a CUDA graph of its own, timing.h) to report kernel time per layer.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels/kernel_types.h"
#include "backends/cuda/kernels/launch_context.h"
#include "backends/cuda/program/graph_io.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

struct Step {
  NodeId node = kNoNode;  // the layer the step's time is reported under (kNoNode: input/output conversions)
  std::string label;      // what runs, e.g. "conv cudnn-graph fused #0 act relu"
  std::function<void(cudaStream_t)> launch;
  std::optional<IoBinding> io;  // set on the input and output conversions (graph_io.h)
  // The operation a profile reports the step's time as, when it is not the node's own: the quantize
  // kernel writing a convolution's codes after it is quantization, not convolution time.
  std::optional<OpKind> reported_op;
};

// The stream and the library handles every step runs on, destroyed after what was made with them.
class LibraryHandles {
 public:
  LibraryHandles();
  ~LibraryHandles();
  LibraryHandles(const LibraryHandles&) = delete;
  LibraryHandles& operator=(const LibraryHandles&) = delete;

  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
};

// A graph input: f32 NCHW as run() receives it, staged through pinned memory.
struct InputStage {
  Shape shape;
  DeviceBuffer device;
  PinnedBuffer host;
};

// Everything a compiled program owns besides the handles.
struct Program {
  Elem elem = Elem::kF32;
  std::vector<DeviceBuffer> constants;        // weights, biases, scales; scratch of the global pools
  std::vector<std::shared_ptr<void>> layers;  // the cuDNN and cuBLASLt objects the steps call into
  DeviceBuffer arena;
  DeviceBuffer workspace;        // the libraries' workspace, sized for the chosen tactics
  DeviceBuffer fp8_accumulator;  // f32 scratch of FP8 convolutions whose epilogue runs in kiln's kernel
  std::vector<InputStage> inputs;
  DeviceBuffer output_device;  // f32, every graph output one after the other
  PinnedBuffer output_host;
  std::vector<Shape> output_shapes;
  std::vector<Step> steps;
  std::map<std::string, nlohmann::json> layer_data;  // each layer's chosen tactic, for the plan
  TacticCounts tactics;
};

class CudaProgram final : public CompiledModel {
 public:
  CudaProgram(const Graph& graph, const CompileOptions& options);
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::vector<LayerTime> last_profile() const override { return profile_; }
  // One replay of the CUDA graph on `stream`, reading the caller's device buffers and writing into the
  // caller's (no copies), without waiting.
  void run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                  void* stream) override;
  std::optional<double> time_device_replays(int iterations) override;
  std::string describe() const override;
  std::map<std::string, nlohmann::json> layer_data() const override { return program_->layer_data; }

 private:
  void capture();
  void enqueue_all();
  void copy_inputs(const std::vector<Tensor>& inputs);
  void profile_steps();
  std::vector<Tensor> read_outputs();

  CompileOptions options_;
  LaunchContext launch_;  // how the program's kernels launch (its early-launch option)
  LibraryHandles handles_;
  std::unique_ptr<Program> program_;  // declared after the handles: destroyed before them
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  GraphIo io_;                             // the graph's input and output conversions
  cudaEvent_t device_run_done_ = nullptr;  // the last device run's end, for the program's own stream
  std::vector<std::string> node_names_;
  std::vector<OpKind> node_ops_;
  std::vector<LayerTime> profile_;
};

}  // namespace kiln::cuda
