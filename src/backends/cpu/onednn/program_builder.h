// Compiles a graph into steps over oneDNN primitives and the backend's own kernels. One builder compiles
// one graph; its op-specific parts live in *_steps.cpp files.
//
// Each value gets the layout its producer chose (format_tag::any lets oneDNN's convolutions pick their
// blocked layouts) and a buffer in the workspace; a consumer that needs another layout gets a reorder
// into a temporary, run as part of its own step. Buffers' lifetimes are the steps that touch them, so the
// workspace can reuse memory once a value's last reader has run.
#pragma once

#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/onednn/fusion.h"
#include "backends/cpu/onednn/int8_weights.h"
#include "backends/cpu/onednn/layout.h"
#include "backends/cpu/onednn/step.h"
#include "backends/cpu/onednn/support.h"
#include "backends/cpu/onednn/workspace.h"

namespace kiln::onednn {

// Inputs and outputs of the run in progress, shared between the model and its staging steps.
struct RunIo {
  const std::vector<Tensor>* inputs = nullptr;
  std::vector<Tensor> outputs;
};

// Everything a compiled model owns.
struct Program {
  dnnl::engine engine;
  std::unique_ptr<Workspace> workspace;
  std::vector<Step> steps;
  std::shared_ptr<RunIo> io;
  std::vector<Shape> input_shapes;
  std::vector<Shape> output_shapes;
  std::vector<dnnl::memory> output_memories;  // plain views of the output tensors, rebound per run
  std::vector<dnnl::memory> constants;        // packed weights, kept alive here
};

class ProgramBuilder {
 public:
  // `int8_weights`: the codes and scales of the graph's int8 convolutions (int8_weights.h).
  ProgramBuilder(const Graph& graph, const CompileOptions& options,
                 std::map<std::string, Int8Weights> int8_weights = {});
  Program build();

 private:
  struct Slot {
    int buffer = -1;
    Desc desc;
    dnnl::memory memory;
  };

  // Step construction: calls added between begin_step and end_step form one step.
  void begin_step(NodeId node);
  void end_step();
  void call(Call c) { current_.calls.push_back(std::move(c)); }
  void note(std::string_view text) {
    if (!current_.label.empty()) current_.label += ' ';
    current_.label.append(text);
  }
  int step_index() const { return static_cast<int>(program_.steps.size()); }

  const Shape& shape(ValueId value) const { return shapes_[static_cast<std::size_t>(value)]; }
  // The layout oneDNN's convolutions pick for themselves on this machine (NHWC for the brgemm kernels
  // of AVX-512 machines, a blocked layout elsewhere), found by asking for one; the backend's own
  // kernels write their results in it where they can.
  void probe_preferred_layout();
  Desc preferred_desc(const Shape& shape) const;
  // The layout a radix kernel reading `x` writes its [N, C, H, W] result `y` in.
  ChannelLayout radix_output_layout(const ChannelLayout& x, const Shape& y) const;
  const Slot& slot(ValueId value) const { return slots_[static_cast<std::size_t>(value)]; }
  // The value as its producer laid it out, in f32, used by the current step (rounded first when the
  // step's node stores below fp32, widened when it is stored in bf16; see precision.h).
  dnnl::memory input(ValueId value);
  // The layout of what input() gives: the value's own, with f32 elements.
  Desc read_desc(ValueId value) const;
  // The value as stored (bf16 or f32), for steps whose kernels read either; rounded as input() rounds.
  dnnl::memory stored_input(ValueId value);
  // The value in layout and element type `desc`: itself when it already has them, else a reorder into a
  // temporary (which rounds to nearest even into bf16, as reading rounded does, and widens bf16 exactly).
  dnnl::memory input_as(ValueId value, const Desc& desc);
  // A new buffer for `value` in layout `desc`, written by the current step.
  dnnl::memory output(ValueId value, const Desc& desc);
  // `value` takes over the buffer of `source` (whose last reader is the current step), in `source`'s layout.
  dnnl::memory output_in_place(ValueId value, ValueId source);
  // Whether every reader of `value` takes it in bf16 as stored (bf16 convolutions, linear layers, pooling,
  // residual adds fused into a convolution, the radix kernels' feature-map input); a bf16 convolution
  // writes f32 otherwise, rounded in place, which costs one pass where each reader's widened copy would
  // cost one.
  bool all_readers_take_bf16(ValueId value) const;
  // `desc` (f32) as the backend's own kernels store `node`'s output: in bf16 where node is a bf16 layer and
  // only layers that take bf16 read it.
  Desc stored_desc(const Node& node, const Desc& desc) const;
  // Whether `value` is no graph output and every node reading it is one `accepts`.
  bool only_read_by(ValueId value, const std::function<bool(NodeId)>& accepts) const;
  // A buffer used only by the current step.
  dnnl::memory temporary(const Desc& desc);
  // A second view of the buffer of `value`'s slot with another layout of the same bytes.
  dnnl::memory view(ValueId value, const Desc& desc);
  void reorder(const dnnl::memory& src, const dnnl::memory& dst);
  // Attributes every primitive gets (the scratchpad is ours), plus `post_ops`.
  dnnl::primitive_attr attributes(const dnnl::post_ops& post_ops = dnnl::post_ops()) const;
  dnnl::memory scratchpad(const dnnl::primitive_desc_base& pd);
  // A constant packed into `desc` once, now.
  dnnl::memory pack_constant(const Tensor& values, const Desc& plain, const Desc& desc);
  // Whether the current step is the last to read `value` (so it may be overwritten).
  bool last_read_here(ValueId value, NodeId reader) const;

  void add_inputs();
  void add_outputs();
  // Builds one step reported under `reported` whose result is `result`'s output (rounded to the node's
  // precision); false when oneDNN refused a primitive on the way.
  bool try_step(NodeId reported, const Node& result, const std::function<void()>& build);
  // One node in a step of its own: natively when possible, else on the reference kernel.
  void emit(NodeId id);
  // A node with whatever find_fusions() absorbed into it.
  void add_node(NodeId id);
  void add_native(const Node& node);

  void add_conv(const Node& conv, const Node* fused_add);  // conv_steps.cpp
  void add_grouped_winograd(const Node& conv, const Tensor& weights, const Tensor* bias);
  // The activation, and the fused residual add (its other operand times `sum_scale`) with its activation,
  // as post-ops.
  dnnl::post_ops conv_post_ops(const Node& conv, const Node* fused_add, float sum_scale = 1.0f) const;
  // The residual of `add`, fused into `conv`: the add's operand that `conv` does not compute.
  ValueId fused_residual(const Node& conv, const Node& add) const;
  // The convolution's dst in `dst`: a new buffer, or the fused add's other operand (in place or copied).
  void bind_conv_output(const Node& conv, const Node* fused_add, const Desc& dst, Args& args);
  void add_int8_conv(const Node& conv, const Node* fused_add);  // int8_conv_steps.cpp
  // A codes sum's residual scale: of the quantize point its other operand comes from.
  float residual_codes_scale(const Node& conv, const Node& add) const;
  // Whether `add`, fused into `conv`, is a codes sum whose residual the quantize step stored as codes.
  bool residual_stored_as_codes(const Node& conv, const Node& add) const;
  // dst made the residual's value (codes x scale) for the sum to accumulate into: an f32 output.
  void bind_dequantized_residual(const Node& conv, const Node& add, const Desc& dst, Args& args);
  dnnl::post_ops int8_post_ops(const Node& conv, const Node* fused_add, float sum_scale, bool codes) const;
  // The int8 quantize point `conv` reads its input through (its scale, or one per channel).
  const QuantizeAttrs& int8_input_quantization(const Node& conv) const;
  // The int8 codes of `x` quantized with `quantize`, in `desc` (s8): as the quantize step stored them, or
  // made by a scaled reorder of its f32 values in the current step.
  dnnl::memory int8_codes(ValueId x, const QuantizeAttrs& quantize, const Desc& desc);
  // Whether every reader of `value` takes it as int8 codes (fusion.h: takes_int8_codes()), so that it may
  // be stored as s8 codes.
  bool all_readers_take_int8_codes(ValueId value) const;
  // The int8 quantize point that alone reads `conv`'s output (`fused_add`'s, for a codes sum) and whose
  // codes only readers of codes read: `conv` then writes those codes itself (activations stay int8
  // between int8 layers). nullptr otherwise.
  const Node* int8_chain_quantize(const Node& conv, const Node* fused_add) const;
  // dst = src x scale, rounded to nearest even and saturated where dst is an integer type; `scales` holds
  // one scale, or one per channel (axis 1).
  void scaled_reorder(const dnnl::memory& src, const dnnl::memory& dst, const std::vector<float>& scales);
  // The reciprocals int8 codes are made with: 1 / scale, or 1 / scale per channel, each in f32.
  static std::vector<float> inverse_scales(const QuantizeAttrs& quantize);
  void add_batch_norm(const Node& node);  // elementwise_steps.cpp
  void add_activation(const Node& node);
  void add_add(const Node& node);
  void add_flatten(const Node& node);
  void add_quantize(const Node& node);
  void add_channel_fake_quantize(const Node& node);  // an int8 quantize point with channel scales, in f32
  void add_pool(const Node& node);                   // pooling_steps.cpp
  void add_global_pool(const Node& node, const Node* fused_radix_sum);
  void add_linear(const Node& node);  // dense_steps.cpp
  // A radix tensor in a layout the radix kernels read (its own, as stored, else NCHW in f32); sets `layout`.
  dnnl::memory radix_input(ValueId value, std::int64_t radix, ChannelLayout& layout);
  // A per-image channel vector and the floats between its images.
  dnnl::memory channel_vector(ValueId value, std::int64_t& stride);
  void add_radix_sum(const Node& node);  // radix_steps.cpp
  void add_radix_softmax(const Node& node);
  void add_radix_weighted_sum(const Node& node);
  void add_channel_scale(const Node& node);
  void add_concat(const Node& node);  // detection_steps.cpp
  void add_upsample(const Node& node);
  void add_channel_slice(const Node& node);
  void add_fallback(const Node& node);  // fallback_step.cpp

  const Graph& graph_;
  CompileOptions options_;
  std::map<std::string, Int8Weights> int8_weights_;
  dnnl::engine engine_;
  dnnl::stream stream_;  // for packing constants at compile time
  Program program_;
  std::vector<Shape> shapes_;
  std::vector<Slot> slots_;
  std::vector<NodeId> order_;
  Fusions fusions_;
  std::vector<std::vector<NodeId>> consumers_;  // per value: the live nodes that read it
  std::vector<int> last_reader_;  // per value: position in order_ of its last reader (outputs: past the end)
  std::vector<int> position_;     // per node: position in order_
  Step current_;
  Precision reading_precision_ = Precision::kF32;  // of the node whose step is being built
  ChannelLayout::Kind preferred_kind_ = ChannelLayout::Kind::kBlocked;
  std::int64_t preferred_block_ = 1;
};

}  // namespace kiln::onednn
