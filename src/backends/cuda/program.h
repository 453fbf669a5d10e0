// A graph compiled for one GPU: every activation at a fixed offset of one device arena (planned once),
// cuDNN convolutions with their tactics chosen at compile time, kiln's kernels for the rest, and the
// whole network captured as one CUDA graph that each run replays. Inputs and outputs pass through
// pinned host buffers. With CompileOptions::profile the steps run one by one instead (no CUDA graph),
// and after each run every step is timed alone (captured into a CUDA graph of its own, timing.h) to
// report kernel time per layer.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/conv.h"
#include "backends/cuda/conv_graph.h"
#include "backends/cuda/cuda_util.h"
#include "runtime/backend.h"

namespace kiln::cuda {

struct Step {
  NodeId node = kNoNode;  // the layer the step's time is reported under (kNoNode: input/output copies)
  std::string label;      // what runs, e.g. "conv fused bias+relu+residual algo 1"
  std::function<void(cudaStream_t)> launch;
};

class CudaModel final : public CompiledModel {
 public:
  CudaModel(const Graph& graph, const CompileOptions& options);
  ~CudaModel() override;
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::vector<LayerTime> last_profile() const override { return profile_; }
  std::optional<double> time_device_replays(int iterations) override;
  std::string describe() const override;

 private:
  void build(const Graph& graph);
  void capture();
  void enqueue_all();

  CompileOptions options_;
  Elem elem_ = Elem::kF32;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;

  std::vector<DeviceBuffer> constants_;  // weights, biases, scales; scratch of the global pools
  std::vector<std::unique_ptr<CudnnConv>> convs_;
  std::vector<std::unique_ptr<CudnnGraphConv>> graph_convs_;
  DeviceBuffer arena_;
  DeviceBuffer workspace_;
  DeviceBuffer input_device_;   // f32 NCHW, as run() receives it
  DeviceBuffer output_device_;  // f32, every graph output one after the other
  PinnedBuffer input_host_;
  PinnedBuffer output_host_;
  Shape input_shape_;
  std::vector<Shape> output_shapes_;
  std::vector<Step> steps_;

  std::vector<std::string> node_names_;
  std::vector<OpKind> node_ops_;
  std::vector<LayerTime> profile_;
  std::size_t tactic_searches_ = 0, tactic_cache_hits_ = 0;
};

}  // namespace kiln::cuda
