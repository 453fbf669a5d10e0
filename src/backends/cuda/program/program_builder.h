// Compiles a graph into a CUDA program (program.h). One builder compiles one graph: it checks the storage
// precision (precision.h), infers the batch's shapes, finds the fusions (fusion.h), places every
// activation in the arena (arena.h), stages the inputs and outputs, and adds each executed node's steps
// through the operator table (op_table.h), whose cases live in *_steps.cpp by operator family.
// Convolution and linear layers get their tactics from pick_tactic() (tactic.h), over the candidates of
// each library and kiln's kernels (convolution/, chosen among in conv_candidates.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/convolution/conv_layer.h"
#include "backends/cuda/convolution/kiln_kernels.h"
#include "backends/cuda/cuda_options.h"
#include "backends/cuda/program/arena.h"
#include "backends/cuda/program/fusion.h"
#include "backends/cuda/program/program.h"
#include "backends/cuda/tactics/stored_tactic.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

struct CudaOp;
struct Fp8GemmScales;

// Extents as the kernels take them.
inline int to_int(std::int64_t v) { return static_cast<int>(v); }
// [N, C, H, W] or [N, C] as NHWC extents: rows (N*H*W) and channels.
inline std::int64_t rows_of(const Shape& s) { return s.size() == 4 ? s[0] * s[2] * s[3] : s[0]; }
inline std::int64_t channels_of(const Shape& s) { return s[1]; }

// Uploads a host tensor as `elem` (f32 or fp16), or its bytes as they are.
DeviceBuffer upload(const Tensor& t, Elem elem);
DeviceBuffer upload_bytes(const Tensor& t);

class ProgramBuilder {
 public:
  ProgramBuilder(const Graph& graph, const CompileOptions& options, const LibraryHandles& handles,
                 std::string device_name);
  std::unique_ptr<Program> build();

 private:
  friend const CudaOp* find_cuda_op(OpKind op);

  // One way to run a layer: a cuDNN, cuBLASLt or kiln kernel object configured for it, and its tactic.
  struct Candidate {
    std::string api;  // kApi*
    std::string key;  // the tactic cache's key
    TacticRecord tactic;
    std::shared_ptr<void> layer;  // what `launch` calls into
    std::function<void(cudaStream_t)> launch;
    // kiln's quantize kernel writing the layer's codes from its output after `launch`; empty when the
    // candidate writes them itself or the layer writes none.
    std::function<void(cudaStream_t)> quantize_kernel;
  };

  // program_builder.cpp
  std::vector<Shape> batch_input_shapes() const;
  void stage_inputs();
  void stage_outputs();
  void add_node(NodeId id);
  void add_step(NodeId node, std::string label, std::function<void(cudaStream_t)> launch);
  const Shape& shape(ValueId value) const { return shapes_[static_cast<std::size_t>(value)]; }
  void* ptr(ValueId value) const;  // where the value starts (inside its root's buffer for a view)
  std::int64_t pitch(ValueId value) const { return views_.pitch(value); }  // 0: packed
  // Whether fp16 SiLU and sigmoid convolutions are offered runtime-compiled fused engines (the views'
  // condition, channel_views.h).
  bool runtime_fused_convs() const;
  const Tensor& constant(ValueId value) const;
  void* keep(DeviceBuffer buffer);  // a constant kept alive with the program; its device address
  TacticSearch tactic_search(bool timed);

  // conv_steps.cpp
  void add_conv2d(NodeId id);
  void add_linear(NodeId id);
  void add_squeeze_mlp(NodeId fc2, NodeId fc1);
  // A fused add's other input: fp16 values, or a quantize point's E4M3 or int8 codes (codes_scale > 0).
  struct Residual {
    const void* data = nullptr;
    float codes_scale = 0.0f;
    bool int8 = false;
  };
  Residual residual_of(ValueId value);
  // `producer`: the node whose output the layer writes (the layer itself, or the add it computes).
  void add_conv_layer(const Node& conv, NodeId reported, Activation activation, Residual residual,
                      NodeId producer);
  ConvGeometry conv_geometry(const Node& conv, const Tensor& weights, const Shape& y_shape) const;
  void* upload_weights(const ConvLayer& layer, const Tensor& weights);
  void add_fp8_scales(const Node& conv, const Tensor& weight_scales, ConvLayer& layer);

  // conv_candidates.cpp
  Candidate choose_candidate(const ConvLayer& layer);
  std::optional<Candidate> planned_candidate(const ConvLayer& layer);
  std::optional<Candidate> searched_candidate(const ConvLayer& layer);
  ConvLayer without_codes(const ConvLayer& layer) const;
  static bool reads_residual_codes(const ConvLayer& layer);
  Candidate then_quantize(const ConvLayer& layer, Candidate c, bool timed);
  // `layer` with its tactic from pick_tactic(), launched on `io`; nothing when no tactic runs it.
  template <class Layer, class Buffers>
  std::optional<Candidate> candidate(const char* api, std::shared_ptr<Layer> layer, const Buffers& io,
                                     bool search_here, const std::optional<TacticRecord>& stored);
  std::size_t graph_engines() const;
  std::optional<Candidate> stored_candidate(const ConvLayer& layer, const StoredTactic& stored);
  // fp8_runtime: an FP8 layer may take cuDNN's runtime-compiled engines (cudnn_graph_conv.h).
  std::optional<Candidate> graph_candidate(const ConvLayer& layer, const ConvGeometry& geometry,
                                           const ConvBuffers& io, const char* api, bool search_here,
                                           const std::optional<TacticRecord>& stored,
                                           bool fp8_runtime = true);
  std::optional<Candidate> legacy_candidate(const ConvLayer& layer, bool search_here,
                                            const std::optional<TacticRecord>& stored);
  std::optional<Candidate> dense_candidate(const ConvLayer& layer, const std::optional<TacticRecord>& stored);
  std::optional<Candidate> cublaslt_candidate(const ConvLayer& layer, bool search_here,
                                              const std::optional<TacticRecord>& stored);
  std::optional<Candidate> kiln_candidate(const ConvLayer& layer, const KilnConvKernel& kernel,
                                          const std::optional<TacticRecord>& stored);
  // `stored_key`: the plan's key for `stored`, which restores only the GEMM variant it names.
  std::optional<Candidate> fp8_gemm_candidate(const ConvLayer& layer, bool search_here,
                                              const std::optional<TacticRecord>& stored,
                                              std::string_view stored_key = {});
  Fp8GemmScales fp8_gemm_scales(const ConvLayer& layer);
  // fp8-gemm=only (cuda_options.h): whether `layer` skips every other candidate (`offered`: the GEMM runs
  // it).
  bool fp8_gemm_only(const ConvLayer& layer, bool offered) const;
  void add_layer_step(const ConvLayer& layer, Candidate chosen);

  // squeeze_excite_steps.cpp
  void add_squeeze_pool(NodeId fc1);
  void add_excite_scale(NodeId scale);
  // A 1x1 convolution's bias uploaded as `elem_` (zeros where it has none).
  const void* upload_bias(const Node& conv, std::int64_t count);
  // A convolution's bias as the graph holds it, or `count` zeros where it has none (host).
  Tensor bias_of(const Node& conv, std::int64_t count) const;
  // elementwise_steps.cpp
  void add_add(NodeId id);
  void add_activation(NodeId id);
  void add_batch_norm(NodeId id);
  void add_channel_scale(NodeId id);
  // pooling_steps.cpp
  void add_pool(NodeId id);
  void add_pool_cascade(NodeId first);
  void add_global_pool(NodeId id);
  // split_attention_steps.cpp
  void add_radix_sum(NodeId id);
  void add_radix_softmax(NodeId id);
  void add_radix_weighted_sum(NodeId id);
  // quantization_steps.cpp
  void add_quantize(NodeId id);
  // Where `producer`'s step writes: its output (null when only the quantize points fused into it read
  // it) and the codes of those (none without; on the quantize points' grid), and the label's note of the
  // fusion.
  void* value_out(NodeId producer) const;
  CodesOut codes_out(NodeId producer) const;
  std::string codes_label(NodeId producer) const;
  // data_movement_steps.cpp
  void add_concat(NodeId id);
  void add_channel_slice(NodeId id);
  void add_upsample(NodeId id);
  // detection_steps.cpp
  void add_attention(NodeId id);
  void add_detect_decode(NodeId id);
  void add_detect_select(NodeId id);

  const Graph& graph_;
  const CompileOptions& options_;
  CudaOptions cuda_;  // the backend's own options (options_.backend_options)
  const LibraryHandles& handles_;
  std::string device_name_;
  std::unique_ptr<Program> program_;
  Elem elem_ = Elem::kF32;
  std::vector<NodeId> order_;
  std::vector<Shape> shapes_;  // per value, at the compiled batch
  Fusions fusions_;
  Schedule schedule_;
  ChannelViews views_;
  ArenaAssignment arena_;
  TacticCache cache_;
  DeviceBuffer search_workspace_;  // what candidates may use while tactics are searched
  std::size_t workspace_bytes_ = 0;
};

}  // namespace kiln::cuda
