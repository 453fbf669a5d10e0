// A graph compiled for one GPU: every activation at a fixed offset of one device arena (planned once),
// cuDNN convolutions and cuBLASLt matmuls with their tactics chosen at compile time (or taken from the
// plan, which stores what its build chose: layer_data()), kiln's kernels for the rest, and the
// whole network captured as one CUDA graph that each run replays. Inputs and outputs pass through
// pinned host buffers. With CompileOptions::profile the steps run one by one instead (no CUDA graph),
// and after each run every step is timed alone (captured into a CUDA graph of its own, timing.h) to
// report kernel time per layer.
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

#include "backends/cuda/conv.h"
#include "backends/cuda/conv_graph.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/gemm.h"
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
  std::map<std::string, nlohmann::json> layer_data() const override { return layer_data_; }

 private:
  // A tactic an earlier compile chose for `layer` (CompileOptions::layer_data) on a GPU of this name.
  struct PlannedTactic {
    std::string api;  // which library runs it
    std::string key;  // the cache key of the layer it was chosen for
    ConvTactic tactic;
  };
  std::optional<PlannedTactic> planned_tactic(const std::string& layer) const;
  void build(const Graph& graph);
  void capture();
  void enqueue_all();

  CompileOptions options_;
  Elem elem_ = Elem::kF32;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  std::string device_name_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;

  std::vector<DeviceBuffer> constants_;  // weights, biases, scales; scratch of the global pools
  std::vector<std::shared_ptr<void>> layers_;  // the cuDNN and cuBLASLt objects the steps call into
  DeviceBuffer arena_;
  DeviceBuffer workspace_;
  DeviceBuffer fp8_accumulator_;  // f32 scratch of FP8 convolutions whose epilogue runs in kiln's kernel
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
  std::map<std::string, nlohmann::json> layer_data_;  // each layer's chosen tactic, for the plan
  std::size_t tactic_searches_ = 0, tactic_cache_hits_ = 0, tactics_from_plan_ = 0, tactics_stale_ = 0;
};

}  // namespace kiln::cuda
