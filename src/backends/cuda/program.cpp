#include "backends/cuda/program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backends/cuda/squeeze_mlp.h"
#include "backends/cuda/timing.h"
#include "graph/shape_inference.h"

namespace kiln::cuda {
namespace {

constexpr std::size_t kAlignment = 256;
// The libraries a layer's tactic runs on (the plan stores the name).
constexpr const char* kApiGraph = "cudnn-graph";        // cuDNN's graph (backend) API
constexpr const char* kApiLegacy = "cudnn-legacy";      // cudnnConvolution(BiasActivation)Forward
constexpr const char* kApiDense = "cudnn-graph-dense";  // a grouped convolution run dense, block-diagonal
constexpr const char* kApiCublasLt = "cublaslt";        // a linear layer as one cuBLASLt matmul
// Workspace cuDNN candidates may use while tactics are searched; larger ones are skipped.
constexpr std::size_t kSearchWorkspace = std::size_t{256} << 20;

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

Act act_of(Activation a) {
  switch (a) {
    case Activation::kNone:
      return Act::kNone;
    case Activation::kRelu:
      return Act::kRelu;
    case Activation::kSilu:
      return Act::kSilu;
    case Activation::kSigmoid:
      return Act::kSigmoid;
  }
  return Act::kNone;
}

int to_int(std::int64_t v) { return static_cast<int>(v); }

// [N, C, H, W] or [N, C] as NHWC extents: rows (N*H*W) and channels.
std::int64_t rows_of(const Shape& s) { return s.size() == 4 ? s[0] * s[2] * s[3] : s[0]; }
std::int64_t channels_of(const Shape& s) { return s[1]; }

// A buffer of the arena and the steps that use it (first and last, inclusive).
struct Lifetime {
  std::size_t bytes = 0;
  int first = 0;
  int last = 0;
};

// Largest buffers first, each at the lowest offset clear of the buffers placed before it whose lifetimes
// overlap its own.
std::vector<std::size_t> place_buffers(const std::vector<Lifetime>& buffers, std::size_t& total) {
  std::vector<std::size_t> offsets(buffers.size(), 0), order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<std::size_t> placed;
  total = 0;
  for (const std::size_t index : order) {
    const Lifetime& buffer = buffers[index];
    const std::size_t size = round_up(std::max<std::size_t>(buffer.bytes, 1), kAlignment);
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (const std::size_t other : placed) {
      const Lifetime& o = buffers[other];
      if (buffer.first <= o.last && o.first <= buffer.last) {
        taken.emplace_back(offsets[other],
                           offsets[other] + round_up(std::max<std::size_t>(o.bytes, 1), kAlignment));
      }
    }
    std::sort(taken.begin(), taken.end());
    std::size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    offsets[index] = offset;
    total = std::max(total, offset + size);
    placed.push_back(index);
  }
  return offsets;
}

// Uploads a host tensor as `elem` (f32 or fp16).
DeviceBuffer upload(const Tensor& t, Elem elem) {
  const Tensor converted = elem == Elem::kF32 ? t.to(DType::kF32) : t.to(DType::kF16);
  DeviceBuffer buffer(converted.nbytes());
  check(cudaMemcpy(buffer.data(), converted.bytes(), converted.nbytes(), cudaMemcpyHostToDevice),
        "uploading weights");
  return buffer;
}

// Uploads a host tensor's bytes as they are.
DeviceBuffer upload_bytes(const Tensor& t) {
  DeviceBuffer buffer(t.nbytes());
  check(cudaMemcpy(buffer.data(), t.bytes(), t.nbytes(), cudaMemcpyHostToDevice), "uploading weights");
  return buffer;
}

// [O, I, kh, kw] -> [O, kh, kw, I] (cuDNN's NHWC filter layout).
Tensor to_krsc(const Tensor& w) {
  const Tensor f = w.to(DType::kF32);
  const std::int64_t o = f.dim(0), in = f.dim(1), kh = f.dim(2), kw = f.dim(3);
  Tensor out(DType::kF32, {o, kh, kw, in});
  const auto src = f.f32();
  const auto dst = out.mutable_f32();
  for (std::int64_t a = 0; a < o; ++a)
    for (std::int64_t c = 0; c < in; ++c)
      for (std::int64_t y = 0; y < kh; ++y)
        for (std::int64_t x = 0; x < kw; ++x)
          dst[((a * kh + y) * kw + x) * in + c] = src[((a * in + c) * kh + y) * kw + x];
  return out;
}

struct Fusions {
  std::vector<NodeId> conv_into_add;        // per add: the convolution computed with it
  std::vector<NodeId> radix_sum_into_pool;  // per global pool: the radix_sum it pools on the fly
  std::vector<NodeId> softmax_into_sum;     // per radix_weighted_sum: the radix_softmax it computes inline
  std::vector<NodeId> squeeze_into_expand;  // per attention gate's second 1x1 conv: the first (squeeze_mlp.h)
  std::vector<bool> absorbed;
};

// A 1x1, stride 1, unpadded, ungrouped convolution with constant weights: a matrix product per pixel.
bool is_pointwise_dense(const Node& conv) {
  const auto& a = conv.attr<ConvAttrs>();
  return a.kernel[0] == 1 && a.kernel[1] == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.groups == 1 &&
         a.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
}

Fusions plan_fusions(const Graph& graph, const std::vector<NodeId>& order) {
  const std::size_t count = graph.nodes().size();
  Fusions f{std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
            std::vector<NodeId>(count, kNoNode), std::vector<NodeId>(count, kNoNode),
            std::vector<bool>(count, false)};
  const auto consumers = graph.consumers();
  std::vector<bool> is_output(graph.values().size(), false);
  for (const ValueId v : graph.outputs()) is_output[static_cast<std::size_t>(v)] = true;
  // The node producing `value` when this node is its only reader and it is no graph output.
  const auto sole_producer = [&](ValueId value, OpKind op) -> NodeId {
    const Value& v = graph.value(value);
    if (v.producer == kNoNode || is_output[static_cast<std::size_t>(value)]) return kNoNode;
    const Node& producer = graph.node(v.producer);
    if (producer.op != op || consumers[static_cast<std::size_t>(value)].size() != 1) return kNoNode;
    return v.producer;
  };
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    const auto index = static_cast<std::size_t>(id);
    if (node.op == OpKind::kAdd) {
      // The operand produced last is the one whose convolution can run at the add's place.
      for (int k = 1; k >= 0; --k) {
        const NodeId conv = sole_producer(node.inputs[static_cast<std::size_t>(k)], OpKind::kConv2d);
        if (conv == kNoNode || graph.node(conv).attr<ConvAttrs>().activation != Activation::kNone) continue;
        if (node.inputs[0] == node.inputs[1] || f.absorbed[static_cast<std::size_t>(conv)]) continue;
        f.conv_into_add[index] = conv;
        f.absorbed[static_cast<std::size_t>(conv)] = true;
        break;
      }
    } else if (node.op == OpKind::kGlobalAvgPool) {
      const NodeId sum = sole_producer(node.inputs[0], OpKind::kRadixSum);
      if (sum != kNoNode) {
        f.radix_sum_into_pool[index] = sum;
        f.absorbed[static_cast<std::size_t>(sum)] = true;
      }
    } else if (node.op == OpKind::kDequantize) {
      f.absorbed[index] = true;  // its FP8 convolutions read the codes and scales at compile time
    } else if (node.op == OpKind::kConv2d && node.precision != Precision::kF8 && is_pointwise_dense(node) &&
               node.attr<ConvAttrs>().activation == Activation::kNone) {
      // fc2 of a gate whose fc1 reads a global pool: both run as one squeeze_mlp launch.
      const NodeId squeeze = sole_producer(node.inputs[0], OpKind::kConv2d);
      if (squeeze == kNoNode || graph.node(squeeze).precision == Precision::kF8 ||
          !is_pointwise_dense(graph.node(squeeze)))
        continue;
      const Value& pooled = graph.value(graph.node(squeeze).inputs[0]);
      if (pooled.producer == kNoNode || graph.node(pooled.producer).op != OpKind::kGlobalAvgPool) continue;
      const Shape& w1 = graph.value(graph.node(squeeze).inputs[1]).shape;
      const Shape& w2 = graph.value(node.inputs[1]).shape;
      if (!squeeze_mlp_fits(static_cast<int>(w1[1]), static_cast<int>(w1[0]), static_cast<int>(w2[0]))) continue;
      f.squeeze_into_expand[index] = squeeze;
      f.absorbed[static_cast<std::size_t>(squeeze)] = true;
    } else if (node.op == OpKind::kRadixWeightedSum) {
      const NodeId softmax = sole_producer(node.inputs[1], OpKind::kRadixSoftmax);
      if (softmax != kNoNode && graph.node(softmax).attr<RadixAttrs>() == node.attr<RadixAttrs>()) {
        f.softmax_into_sum[index] = softmax;
        f.absorbed[static_cast<std::size_t>(softmax)] = true;
      }
    }
  }
  return f;
}

}  // namespace

CudaModel::CudaModel(const Graph& graph, const CompileOptions& options) : options_(options) {
  require(options.batch >= 1, "cuda backend: batch must be at least 1, got ", options.batch);
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
  check(cudnnCreate(&cudnn_), "creating the cuDNN handle");
  check(cudnnSetStream(cudnn_, stream_), "binding cuDNN to the stream");
  check(cublasLtCreate(&cublaslt_), "creating the cuBLASLt handle");
  device_name_ = current_device_name();
  build(graph);
  // One eager run loads every kernel before the graph is captured.
  enqueue_all();
  check(cudaStreamSynchronize(stream_), "running the network once");
  if (!options_.profile) capture();
}

CudaModel::~CudaModel() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  layers_.clear();  // before the handles they were made with
  if (cublaslt_ != nullptr) cublasLtDestroy(cublaslt_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::optional<CudaModel::PlannedTactic> CudaModel::planned_tactic(const std::string& layer) const {
  const auto entry = options_.layer_data.find(layer);
  if (entry == options_.layer_data.end() || !entry->second.contains("tactic")) return std::nullopt;
  try {
    const nlohmann::json& t = entry->second.at("tactic");
    if (t.at("device").get<std::string>() != device_name_) return std::nullopt;  // timed on another GPU
    return PlannedTactic{t.at("api").get<std::string>(), t.at("key").get<std::string>(),
                         ConvTactic{t.at("fused").get<bool>(), t.at("algorithm").get<int>(),
                                    t.at("workspace").get<std::size_t>(), t.at("us").get<double>() / 1000.0}};
  } catch (const nlohmann::json::exception& e) {
    fail("plan: layer '", layer, "': malformed tactic (expected api, key, device, fused, algorithm, workspace, us): ",
         e.what());
  }
}

void CudaModel::build(const Graph& graph) {
  // One storage precision for the whole graph, fp16 (f32 accumulation) or f32; FP8 convolutions (E4M3
  // in, fp16 out) and their quantize points sit among fp16 layers.
  const std::vector<NodeId> order = graph.topological_order();
  require(!order.empty(), "cuda backend: the graph has no layers");
  std::optional<Precision> storage;
  bool has_fp8 = false;
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kQuantize || node.op == OpKind::kDequantize) continue;
    if (node.precision == Precision::kF8) {
      has_fp8 = true;
      continue;
    }
    if (!storage) storage = node.precision;
    require(node.precision == *storage, "cuda backend: layer '", node.name, "' is ",
            precision_name(node.precision), " but the network is ", precision_name(*storage),
            "; mixed precision is not supported yet");
  }
  require(!has_fp8 || !storage || *storage == Precision::kF16,
          "cuda backend: FP8 layers run among fp16 layers, but this plan's other layers are ",
          precision_name(storage.value_or(Precision::kF32)), "; rebuild it with --fp8-fallback fp16");
  elem_ = storage.value_or(Precision::kF16) == Precision::kF16 ? Elem::kF16 : Elem::kF32;
  for (const Node& node : graph.nodes()) {
    node_names_.push_back(node.name);
    node_ops_.push_back(node.op);
  }

  require(graph.inputs().size() == 1, "cuda backend: expected one graph input, got ", graph.inputs().size());
  const ValueId input = graph.inputs().front();
  input_shape_ = graph.value(input).shape;
  require(input_shape_.size() == 4, "cuda backend: expected an NCHW graph input, got ",
          shape_str(input_shape_));
  input_shape_[0] = options_.batch;
  const std::vector<Shape> shapes = infer_shapes(graph, {input_shape_});
  const auto shape = [&](ValueId v) -> const Shape& { return shapes[static_cast<std::size_t>(v)]; };

  const Fusions fusions = plan_fusions(graph, order);
  // Steps: 0 converts the input, then one per executed node, then the output conversion.
  std::vector<NodeId> executed;
  for (const NodeId id : order) {
    if (!fusions.absorbed[static_cast<std::size_t>(id)]) executed.push_back(id);
  }
  std::vector<int> position(graph.nodes().size(), -1);
  for (std::size_t i = 0; i < executed.size(); ++i)
    position[static_cast<std::size_t>(executed[i])] = static_cast<int>(i) + 1;
  for (const NodeId id : executed) {
    const auto index = static_cast<std::size_t>(id);
    for (const NodeId inner : {fusions.conv_into_add[index], fusions.radix_sum_into_pool[index],
                               fusions.softmax_into_sum[index], fusions.squeeze_into_expand[index]}) {
      if (inner != kNoNode) position[static_cast<std::size_t>(inner)] = position[index];
    }
  }
  const int output_step = static_cast<int>(executed.size()) + 1;

  // Buffers: one per materialized value; a flatten's output is its input's buffer.
  std::vector<int> buffer_of(graph.values().size(), -1);
  std::vector<Lifetime> buffers;
  const std::size_t elem_size = elem_bytes(elem_);
  const auto new_buffer = [&](ValueId v, int first) {
    // A quantize point's output holds one E4M3 byte per element.
    const NodeId producer = graph.value(v).producer;
    const bool codes = producer != kNoNode && graph.node(producer).op == OpKind::kQuantize;
    buffer_of[static_cast<std::size_t>(v)] = static_cast<int>(buffers.size());
    buffers.push_back({static_cast<std::size_t>(shape_numel(shape(v))) * (codes ? 1 : elem_size), first, first});
  };
  new_buffer(input, 0);
  for (const NodeId id : executed) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kFlatten) {
      buffer_of[static_cast<std::size_t>(node.output)] = buffer_of[static_cast<std::size_t>(node.inputs[0])];
    } else {
      new_buffer(node.output, position[static_cast<std::size_t>(id)]);
    }
  }
  for (const NodeId id : order) {
    for (const ValueId v : graph.node(id).inputs) {
      const int b = buffer_of[static_cast<std::size_t>(v)];
      if (b >= 0)
        buffers[static_cast<std::size_t>(b)].last =
            std::max(buffers[static_cast<std::size_t>(b)].last, position[static_cast<std::size_t>(id)]);
    }
  }
  for (const ValueId v : graph.outputs()) {
    const int b = buffer_of[static_cast<std::size_t>(v)];
    require(b >= 0, "cuda backend: graph output '", graph.value(v).name, "' is not computed by a layer");
    buffers[static_cast<std::size_t>(b)].last = output_step;
  }
  std::size_t arena_bytes = 0;
  const std::vector<std::size_t> offsets = place_buffers(buffers, arena_bytes);
  arena_ = DeviceBuffer(arena_bytes);
  // Tactics are timed on the arena: fill it with finite non-zero values first.
  check(fill_pattern(arena_.data(), elem_, static_cast<std::int64_t>(arena_bytes / elem_size), stream_),
        "filling the arena");
  const auto ptr = [&](ValueId v) -> void* {
    const int b = buffer_of[static_cast<std::size_t>(v)];
    require(b >= 0, "cuda backend: value '", graph.value(v).name, "' has no buffer");
    return static_cast<std::byte*>(arena_.data()) + offsets[static_cast<std::size_t>(b)];
  };
  const auto constant = [&](ValueId v) -> const Tensor& {
    const Value& value = graph.value(v);
    require(value.is_constant(), "cuda backend: expected '", value.name, "' to be a constant");
    return value.constant;
  };
  const auto keep = [&](DeviceBuffer buffer) -> void* {
    constants_.push_back(std::move(buffer));
    return constants_.back().data();
  };

  // Input and output staging.
  const std::int64_t input_elems = shape_numel(input_shape_);
  input_device_ = DeviceBuffer(static_cast<std::size_t>(input_elems) * 4);
  input_host_ = PinnedBuffer(static_cast<std::size_t>(input_elems) * 4);
  std::int64_t output_elems = 0;
  for (const ValueId v : graph.outputs()) {
    output_shapes_.push_back(shape(v));
    output_elems += shape_numel(shape(v));
  }
  output_device_ = DeviceBuffer(static_cast<std::size_t>(output_elems) * 4);
  output_host_ = PinnedBuffer(static_cast<std::size_t>(output_elems) * 4);

  {
    void* x = ptr(input);
    const int n = to_int(input_shape_[0]), c = to_int(input_shape_[1]),
              hw = to_int(input_shape_[2] * input_shape_[3]);
    float* src = static_cast<float*>(input_device_.data());
    const Elem e = elem_;
    steps_.push_back({kNoNode, "input NCHW f32 -> NHWC", [=](cudaStream_t s) {
                        check(nchw_f32_to_nhwc(src, x, e, n, c, hw, s), "converting the input");
                      }});
  }

  // Tactics: the plan's choice when it applies to this machine, else the cache file's, else chosen now
  // (timed with CUDA events unless the optimization level is 0).
  // The f32 scratch FP8 convolutions accumulate into when cuDNN cannot fuse their epilogue; steps run
  // one after another, so one buffer serves them all.
  std::size_t accumulator_bytes = 0;
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kConv2d && node.precision == Precision::kF8)
      accumulator_bytes = std::max(accumulator_bytes, static_cast<std::size_t>(shape_numel(shape(node.output))) * 4);
  }
  fp8_accumulator_ = DeviceBuffer(accumulator_bytes);
  TacticCache cache(options_.tactic_cache);
  const bool search = options_.opt_level != 0;
  DeviceBuffer search_workspace(kSearchWorkspace);
  std::size_t workspace_bytes = 0;

  // One way to run a layer: a cuDNN or cuBLASLt object configured for it, and the tactic it runs with.
  struct Candidate {
    std::string api;  // kApiGraph, kApiLegacy, kApiDense or kApiCublasLt
    std::string key;  // the tactic cache's key
    ConvTactic tactic;
    std::shared_ptr<void> layer;  // what `launch` calls into
    std::function<void(cudaStream_t)> launch;
  };
  // A candidate's tactic: `given` (the plan's) when there is one and it applies; otherwise the cache's
  // if it still applies, else `choose` (which may find none).
  const auto resolve = [&](Candidate c, const std::optional<ConvTactic>& given,
                           const std::function<bool(const ConvTactic&)>& apply,
                           const std::function<std::optional<ConvTactic>()>& choose,
                           bool remember) -> std::optional<Candidate> {
    if (given) {
      if (!apply(*given)) return std::nullopt;
      c.tactic = *given;
      return c;
    }
    if (const auto cached = cache.find(c.key); cached && apply(*cached)) {
      c.tactic = *cached;
      ++tactic_cache_hits_;
      return c;
    }
    ++tactic_searches_;
    const std::optional<ConvTactic> chosen = choose();
    if (!chosen) return std::nullopt;
    if (remember) cache.put(c.key, *chosen);
    c.tactic = *chosen;
    return c;
  };

  const auto add_conv = [&](const Node& conv, NodeId reported, Activation activation, const void* residual,
                            void* y, const Shape& y_shape) {
    const bool linear = conv.op == OpKind::kLinear;
    const bool fp8 = conv.precision == Precision::kF8;
    const Shape& xs = shape(conv.inputs[0]);
    ConvGeometry g;
    // An FP8 layer's weights: the E4M3 codes and per-channel scales its dequantize point holds.
    const Node* dequantize = fp8 ? &graph.node(graph.value(conv.inputs[1]).producer) : nullptr;
    const Tensor& weight = fp8 ? constant(dequantize->inputs[0]) : constant(conv.inputs[1]);
    g.n = to_int(xs[0]);
    g.c = to_int(xs[1]);
    g.k = to_int(weight.dim(0));
    if (!linear) {
      const auto& a = conv.attr<ConvAttrs>();
      g.h = to_int(xs[2]);
      g.w = to_int(xs[3]);
      g.r = to_int(a.kernel[0]);
      g.s = to_int(a.kernel[1]);
      g.out_h = to_int(y_shape[2]);
      g.out_w = to_int(y_shape[3]);
      g.pad_h = to_int(a.padding[0]);
      g.pad_w = to_int(a.padding[1]);
      g.stride_h = to_int(a.stride[0]);
      g.stride_w = to_int(a.stride[1]);
      g.dilation_h = to_int(a.dilation[0]);
      g.dilation_w = to_int(a.dilation[1]);
      g.groups = to_int(a.groups);
    }
    const Tensor w = linear ? weight.to(DType::kF32) : to_krsc(weight);
    // Weights as the kernels read them: E4M3 codes (exact: they came from E4M3) or the storage type.
    const auto upload_weights = [&](const Tensor& t) { return keep(fp8 ? upload_bytes(t.to(DType::kF8E4M3)) : upload(t, elem_)); };
    ConvBuffers b;
    b.x = ptr(conv.inputs[0]);
    b.weight = upload_weights(w);
    const Tensor bias = conv.inputs.size() > 2 ? constant(conv.inputs[2]) : Tensor(DType::kF32, {g.k});
    b.bias = keep(upload(bias, fp8 ? Elem::kF32 : elem_));
    if (fp8) {
      // y = (sum of code products) * input scale * weight scale[k] + bias.
      const float input_scale = graph.node(graph.value(conv.inputs[0]).producer).attr<QuantizeAttrs>().scale;
      const Tensor weight_scales = constant(dequantize->inputs[1]).to(DType::kF32);
      Tensor scale(DType::kF32, {g.k});
      for (std::int64_t k = 0; k < g.k; ++k) {
        const auto i = static_cast<std::size_t>(k);
        scale.mutable_f32()[i] = input_scale * weight_scales.f32()[weight_scales.numel() == 1 ? 0 : i];
      }
      b.scale = static_cast<const float*>(keep(upload(scale, Elem::kF32)));
      b.accumulator = static_cast<float*>(fp8_accumulator_.data());
    }
    b.residual = residual;
    b.y = y;
    const Act act = act_of(activation);
    const bool has_residual = residual != nullptr;

    // The candidates, by API. `search_here` false: the library's heuristic choice.
    const auto graph_conv = [&](const ConvGeometry& geometry, const ConvBuffers& io, const char* api,
                                bool search_here, const std::optional<ConvTactic>& given) {
      auto layer = std::make_shared<CudnnGraphConv>(cudnn_, elem_, geometry, act, has_residual, fp8);
      CudnnGraphConv* raw = layer.get();
      Candidate c{api, layer->key(), {}, layer,
                  [this, raw, io](cudaStream_t s) { raw->enqueue(io, workspace_.data(), s); }};
      return resolve(
          c, given, [raw](const ConvTactic& t) { return raw->set_tactic(t); },
          [&] { return raw->choose(search_here, io, search_workspace.data(), kSearchWorkspace, stream_); },
          search_here);
    };
    const auto legacy_conv = [&](bool search_here, const std::optional<ConvTactic>& given) {
      auto layer = std::make_shared<CudnnConv>(cudnn_, elem_, g, act, has_residual);
      CudnnConv* raw = layer.get();
      Candidate c{kApiLegacy, layer->key(), {}, layer,
                  [this, raw, b](cudaStream_t s) { raw->enqueue(b, workspace_.data(), s); }};
      const auto apply = [raw](const ConvTactic& t) {
        raw->set_tactic(t);
        return true;
      };
      return resolve(
          c, given, apply,
          [&] {
            return std::optional<ConvTactic>(
                raw->choose(search_here, b, search_workspace.data(), kSearchWorkspace, stream_));
          },
          search_here);
    };
    // A grouped convolution with few groups may run faster as one dense convolution over
    // block-diagonal weights (zeros between the groups: more arithmetic, better kernels).
    const auto dense_conv = [&](const std::optional<ConvTactic>& given) {
      ConvGeometry dense = g;
      dense.groups = 1;
      const std::int64_t per_group_in = g.c / g.groups, per_group_out = g.k / g.groups, taps = g.r * g.s;
      Tensor wide(DType::kF32, {g.k, g.r, g.s, g.c});
      const auto src = w.f32();
      const auto dst = wide.mutable_f32();
      std::fill(dst.begin(), dst.end(), 0.0f);
      for (std::int64_t o = 0; o < g.k; ++o) {
        const std::int64_t first = o / per_group_out * per_group_in;
        for (std::int64_t tap = 0; tap < taps; ++tap) {
          for (std::int64_t i = 0; i < per_group_in; ++i) {
            dst[static_cast<std::size_t>((o * taps + tap) * g.c + first + i)] =
                src[static_cast<std::size_t>((o * taps + tap) * per_group_in + i)];
          }
        }
      }
      ConvBuffers bd = b;
      bd.weight = upload_weights(wide);
      return graph_conv(dense, bd, kApiDense, true, given);
    };
    const auto cublaslt_linear = [&](bool search_here, const std::optional<ConvTactic>& given) {
      auto layer = std::make_shared<CublasLtLinear>(cublaslt_, elem_, g.n, g.c, g.k, act);
      CublasLtLinear* raw = layer.get();
      const LinearBuffers lb{b.x, b.weight, b.bias, b.y};
      Candidate c{kApiCublasLt, layer->key(), {}, layer,
                  [this, raw, lb](cudaStream_t s) { raw->enqueue(lb, workspace_.data(), s); }};
      return resolve(
          c, given, [raw](const ConvTactic& t) { return raw->set_tactic(t); },
          [&] { return raw->choose(search_here, lb, search_workspace.data(), kSearchWorkspace, stream_); },
          search_here);
    };

    const std::string& name = graph.node(reported).name;
    std::optional<Candidate> best;
    // The plan's tactic, when it was chosen on this kind of GPU with this library for this very layer.
    const std::optional<PlannedTactic> planned = planned_tactic(name);
    if (!planned && options_.layer_data.contains(name)) ++tactics_stale_;
    if (planned) {
      const auto& [api, key, tactic] = *planned;
      std::optional<Candidate> c;
      if (api == kApiGraph && elem_ == Elem::kF16) c = graph_conv(g, b, kApiGraph, search, tactic);
      if (api == kApiLegacy && !fp8) c = legacy_conv(search, tactic);
      if (api == kApiDense && elem_ == Elem::kF16 && g.groups > 1) c = dense_conv(tactic);
      if (api == kApiCublasLt && linear) c = cublaslt_linear(search, tactic);
      if (c && c->key == key) {
        best = std::move(c);
        ++tactics_from_plan_;
      } else {
        ++tactics_stale_;
      }
    }
    const auto consider = [&](std::optional<Candidate> c) {
      if (c && (!best || c->tactic.milliseconds < best->tactic.milliseconds)) best = std::move(c);
    };
    // GEMMs go to cuBLASLt; cuDNN runs a linear layer as a 1x1 convolution only if cuBLASLt cannot.
    if (!best && linear) consider(cublaslt_linear(search, std::nullopt));
    if (!best) {
      // fp16: cuDNN's graph API (Hopper's kernels) against its legacy API when timing, else the graph
      // API's heuristic choice. f32 stays on the legacy API, whose FMA math type keeps TF32 out.
      // FP8 has no legacy-API path; a grouped FP8 convolution cuDNN has no kernel for runs dense.
      if (elem_ == Elem::kF16) consider(graph_conv(g, b, kApiGraph, search, std::nullopt));
      if (!fp8 && (!best || (search && elem_ == Elem::kF16))) consider(legacy_conv(search, std::nullopt));
      if (elem_ == Elem::kF16 && !linear && g.groups > 1 && ((search && g.groups <= 4) || (fp8 && !best)))
        consider(dense_conv(std::nullopt));
    }
    require(best.has_value(), "cuda backend: layer '", name, "': no ", fp8 ? "FP8 " : "",
            "cuDNN or cuBLASLt tactic runs it");
    const ConvTactic& t = best->tactic;
    workspace_bytes = std::max(workspace_bytes, t.workspace);
    layer_data_[name] = {{"tactic",
                          {{"api", best->api},
                           {"key", best->key},
                           {"device", device_name_},
                           {"fused", t.fused},
                           {"algorithm", t.algorithm},
                           {"workspace", t.workspace},
                           {"us", t.milliseconds * 1000.0}}}};
    layers_.push_back(best->layer);
    steps_.push_back({reported,
                      cat(linear ? "linear " : fp8 ? "fp8 conv " : "conv ", best->api, t.fused ? " fused" : " + epilogue kernel",
                          " #", t.algorithm, " act ", activation_name(activation), has_residual ? " +residual" : "",
                          t.milliseconds > 0 ? cat(" (", t.milliseconds * 1000.0, " us)") : std::string()),
                      std::move(best->launch)});
  };
  for (const NodeId id : executed) {
    const Node& node = graph.node(id);
    const auto index = static_cast<std::size_t>(id);
    const Shape& out_shape = shape(node.output);
    const Elem e = elem_;
    switch (node.op) {
      case OpKind::kConv2d: {
        const NodeId squeeze = fusions.squeeze_into_expand[index];
        if (squeeze == kNoNode) {
          add_conv(node, id, node.attr<ConvAttrs>().activation, nullptr, ptr(node.output), out_shape);
          break;
        }
        const Node& fc1 = graph.node(squeeze);
        const Tensor& w1 = constant(fc1.inputs[1]);
        const Tensor& w2 = constant(node.inputs[1]);
        const int n = to_int(out_shape[0]), in = to_int(w1.dim(1)), hidden = to_int(w1.dim(0)),
                  out = to_int(w2.dim(0));
        // Biases default to zeros; [O, I, 1, 1] weights are already the row-major [O, I] the kernel reads.
        const auto bias_of = [&](const Node& conv, std::int64_t count) {
          return conv.inputs.size() > 2 ? constant(conv.inputs[2]) : Tensor(DType::kF32, {count});
        };
        const void* pw1 = keep(upload(w1, e));
        const void* pb1 = keep(upload(bias_of(fc1, hidden), e));
        const void* pw2 = keep(upload(w2, e));
        const void* pb2 = keep(upload(bias_of(node, out), e));
        const Act act1 = act_of(fc1.attr<ConvAttrs>().activation);
        const void* x = ptr(fc1.inputs[0]);
        void* y = ptr(node.output);
        steps_.push_back({id, cat("attention gate fc1 + act + fc2 (squeeze_mlp, ", in, " -> ", hidden, " -> ", out, ")"),
                          [=](cudaStream_t s) {
                            check(squeeze_mlp(x, pw1, pb1, act1, pw2, pb2, y, e, n, in, hidden, out, s),
                                  "attention gate");
                          }});
        break;
      }
      case OpKind::kLinear:
        add_conv(node, id, Activation::kNone, nullptr, ptr(node.output), out_shape);
        break;
      case OpKind::kAdd: {
        const Activation act = node.attr<AddAttrs>().activation;
        const NodeId conv = fusions.conv_into_add[index];
        if (conv != kNoNode) {
          const Node& c = graph.node(conv);
          const ValueId other = node.inputs[0] == c.output ? node.inputs[1] : node.inputs[0];
          add_conv(c, conv, act, ptr(other), ptr(node.output), out_shape);
          break;
        }
        const void* a = ptr(node.inputs[0]);
        const void* b = ptr(node.inputs[1]);
        void* y = ptr(node.output);
        const std::int64_t rows = rows_of(out_shape);
        const int ch = to_int(channels_of(out_shape));
        steps_.push_back({id, cat("add act ", activation_name(act)), [=](cudaStream_t s) {
                            check(add_bias_act(a, b, nullptr, y, e, rows, ch, act_of(act), s), "add");
                          }});
        break;
      }
      case OpKind::kActivation: {
        const Act act = act_of(node.attr<ActivationAttrs>().activation);
        const void* x = ptr(node.inputs[0]);
        void* y = ptr(node.output);
        const std::int64_t rows = rows_of(out_shape);
        const int ch = to_int(channels_of(out_shape));
        steps_.push_back({id, "activation", [=](cudaStream_t s) {
                            check(add_bias_act(x, nullptr, nullptr, y, e, rows, ch, act, s), "activation");
                          }});
        break;
      }
      case OpKind::kBatchNorm: {
        const float eps = node.attr<BatchNormAttrs>().epsilon;
        const auto gamma = constant(node.inputs[1]).to(DType::kF32),
                   beta = constant(node.inputs[2]).to(DType::kF32);
        const auto mean = constant(node.inputs[3]).to(DType::kF32),
                   var = constant(node.inputs[4]).to(DType::kF32);
        const std::int64_t ch = channels_of(out_shape);
        Tensor scale(DType::kF32, {ch}), shift(DType::kF32, {ch});
        for (std::int64_t c = 0; c < ch; ++c) {
          const auto i = static_cast<std::size_t>(c);
          const double s = gamma.f32()[i] / std::sqrt(static_cast<double>(var.f32()[i]) + eps);
          scale.mutable_f32()[i] = static_cast<float>(s);
          shift.mutable_f32()[i] = static_cast<float>(beta.f32()[i] - mean.f32()[i] * s);
        }
        const auto* sc = static_cast<const float*>(keep(upload(scale, Elem::kF32)));
        const auto* sh = static_cast<const float*>(keep(upload(shift, Elem::kF32)));
        const void* x = ptr(node.inputs[0]);
        void* y = ptr(node.output);
        const std::int64_t rows = rows_of(out_shape);
        steps_.push_back({id, "batch norm (scale, shift)", [=](cudaStream_t s) {
                            check(scale_shift(x, sc, sh, y, e, rows, to_int(ch), s), "batch norm");
                          }});
        break;
      }
      case OpKind::kMaxPool2d:
      case OpKind::kAvgPool2d: {
        const auto& a = node.attr<PoolAttrs>();
        const Shape& xs = shape(node.inputs[0]);
        const PoolShape p{to_int(xs[0]),        to_int(xs[1]),        to_int(xs[2]),
                          to_int(xs[3]),        to_int(out_shape[2]), to_int(out_shape[3]),
                          to_int(a.kernel[0]),  to_int(a.kernel[1]),  to_int(a.stride[0]),
                          to_int(a.stride[1]),  to_int(a.padding[0]), to_int(a.padding[1]),
                          to_int(a.padding[2]), to_int(a.padding[3]), a.count_include_pad};
        const void* x = ptr(node.inputs[0]);
        void* y = ptr(node.output);
        const bool is_max = node.op == OpKind::kMaxPool2d;
        steps_.push_back({id, is_max ? "max pool" : "avg pool", [=](cudaStream_t s) {
                            check(is_max ? max_pool(x, y, e, p, s) : avg_pool(x, y, e, p, s), "pooling");
                          }});
        break;
      }
      case OpKind::kGlobalAvgPool: {
        const NodeId sum = fusions.radix_sum_into_pool[index];
        const ValueId source = sum != kNoNode ? graph.node(sum).inputs[0] : node.inputs[0];
        const int radix = sum != kNoNode ? to_int(graph.node(sum).attr<RadixAttrs>().radix) : 1;
        const Shape& xs = shape(source);
        const int n = to_int(xs[0]), hw = to_int(xs[2] * xs[3]), c = to_int(xs[1]) / radix;
        DeviceBuffer partial(2 * static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * 4);
        check(cudaMemset(partial.data(), 0, partial.bytes()), "zeroing pool scratch");
        auto* scratch = static_cast<float*>(keep(std::move(partial)));
        const void* x = ptr(source);
        void* y = ptr(node.output);
        steps_.push_back({sum != kNoNode ? sum : id,
                          sum != kNoNode ? "radix sum + global avg pool" : "global avg pool",
                          [=](cudaStream_t s) {
                            check(radix_global_pool(x, y, scratch, e, n, hw, radix, c, s), "global pool");
                          }});
        break;
      }
      case OpKind::kFlatten:
        break;  // NHWC [N, C, 1, 1] is already [N, C]
      case OpKind::kRadixSum: {
        const int radix = to_int(node.attr<RadixAttrs>().radix);
        const void* x = ptr(node.inputs[0]);
        void* y = ptr(node.output);
        const std::int64_t rows = rows_of(out_shape);
        const int c = to_int(channels_of(out_shape));
        steps_.push_back({id, "radix sum", [=](cudaStream_t s) {
                            check(radix_sum(x, y, e, rows, radix, c, s), "radix sum");
                          }});
        break;
      }
      case OpKind::kRadixSoftmax: {
        const auto& a = node.attr<RadixAttrs>();
        const int n = to_int(out_shape[0]), radix = to_int(a.radix), card = to_int(a.cardinality);
        const int c = to_int(out_shape[1]) / radix;
        const void* x = ptr(node.inputs[0]);
        void* y = ptr(node.output);
        steps_.push_back({id, "radix softmax", [=](cudaStream_t s) {
                            check(radix_softmax(x, y, e, n, radix, card, c, s), "radix softmax");
                          }});
        break;
      }
      case OpKind::kRadixWeightedSum: {
        const auto& a = node.attr<RadixAttrs>();
        const NodeId softmax = fusions.softmax_into_sum[index];
        const int n = to_int(out_shape[0]), hw = to_int(out_shape[2] * out_shape[3]),
                  c = to_int(out_shape[1]);
        const int radix = to_int(a.radix), card = to_int(a.cardinality);
        const void* x = ptr(node.inputs[0]);
        const void* w = softmax != kNoNode ? ptr(graph.node(softmax).inputs[0]) : ptr(node.inputs[1]);
        void* y = ptr(node.output);
        const bool fused = softmax != kNoNode;
        steps_.push_back(
            {id, fused ? "radix softmax + weighted sum" : "radix weighted sum", [=](cudaStream_t s) {
               check(radix_weighted_sum(x, w, y, e, n, hw, radix, card, c, fused, s), "weighted sum");
             }});
        break;
      }
      case OpKind::kQuantize: {
        const void* x = ptr(node.inputs[0]);
        auto* y = static_cast<std::uint8_t*>(ptr(node.output));
        const std::int64_t count = shape_numel(out_shape);
        const float scale = node.attr<QuantizeAttrs>().scale;
        steps_.push_back({id, "quantize to E4M3", [=](cudaStream_t s) {
                            check(quantize_e4m3(x, e, y, count, scale, s), "quantizing to E4M3");
                          }});
        break;
      }
      case OpKind::kDequantize:  // absorbed: its convolutions took the codes and scales
        break;
      case OpKind::kChannelScale:
      case OpKind::kConcat:
      case OpKind::kChannelSlice:
      case OpKind::kUpsample:
      case OpKind::kAttention:
      case OpKind::kDetectDecode:
        // CudaBackend::compile refuses these (unsupported_reason) before a model is built.
        fail("cuda backend: layer '", node.name, "' (", op_kind_name(node.op), "): not supported");
    }
  }

  {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < graph.outputs().size(); ++i) {
      const Shape& s = output_shapes_[i];
      const void* x = ptr(graph.outputs()[i]);
      float* y = static_cast<float*>(output_device_.data()) + offset;
      const int n = to_int(s[0]), c = to_int(s[1]), hw = s.size() == 4 ? to_int(s[2] * s[3]) : 1;
      const Elem e = elem_;
      steps_.push_back({kNoNode, "output NHWC -> NCHW f32", [=](cudaStream_t st) {
                          check(nhwc_to_nchw_f32(x, e, y, n, c, hw, st), "converting an output");
                        }});
      offset += shape_numel(s);
    }
  }
  cache.save();
  search_workspace = DeviceBuffer();
  workspace_ = DeviceBuffer(std::max<std::size_t>(workspace_bytes, kAlignment));
}

void CudaModel::enqueue_all() {
  for (const Step& step : steps_) step.launch(stream_);
}

void CudaModel::capture() {
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "starting graph capture");
  try {
    enqueue_all();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream_, &broken);
    if (broken != nullptr) cudaGraphDestroy(broken);
    throw;
  }
  check(cudaStreamEndCapture(stream_, &graph_), "ending graph capture");
  check(cudaGraphInstantiate(&exec_, graph_, 0), "instantiating the CUDA graph");
  check(cudaGraphUpload(exec_, stream_), "uploading the CUDA graph");
  check(cudaStreamSynchronize(stream_), "uploading the CUDA graph");
}

std::vector<Tensor> CudaModel::run(const std::vector<Tensor>& inputs) {
  require(inputs.size() == 1, "cuda backend: expected 1 input tensor, got ", inputs.size());
  const Tensor& input = inputs.front();
  require(input.dtype() == DType::kF32, "graph inputs must be f32, got ", dtype_name(input.dtype()));
  require(input.shape() == input_shape_, "this model was compiled for input shape ", shape_str(input_shape_),
          ", got ", shape_str(input.shape()));
  std::memcpy(input_host_.data(), input.bytes(), input.nbytes());
  check(cudaMemcpyAsync(input_device_.data(), input_host_.data(), input.nbytes(), cudaMemcpyHostToDevice,
                        stream_),
        "copying the input");
  if (options_.profile) {
    // Kernel time per layer: each step captured alone in a CUDA graph and its replays timed with
    // events (timing.h), on this run's data, so launch gaps and host overhead are not counted.
    enqueue_all();
    check(cudaStreamSynchronize(stream_), "running the network");
    profile_.clear();
    std::vector<int> entry(node_names_.size(), -1);
    for (const Step& step : steps_) {
      if (step.node == kNoNode) continue;
      const auto ms = time_launch(stream_, [&](cudaStream_t s) {
        step.launch(s);
        return true;
      });
      require(ms.has_value(), "cuda backend: could not time step '", step.label, "'");
      int& index = entry[static_cast<std::size_t>(step.node)];
      if (index < 0) {
        index = static_cast<int>(profile_.size());
        profile_.push_back({node_names_[static_cast<std::size_t>(step.node)],
                            node_ops_[static_cast<std::size_t>(step.node)], 0.0});
      }
      profile_[static_cast<std::size_t>(index)].milliseconds += *ms;
    }
  } else {
    check(cudaGraphLaunch(exec_, stream_), "launching the CUDA graph");
  }
  check(cudaMemcpyAsync(output_host_.data(), output_device_.data(), output_device_.bytes(),
                        cudaMemcpyDeviceToHost, stream_),
        "copying the outputs");
  check(cudaStreamSynchronize(stream_), "running the network");
  std::vector<Tensor> outputs;
  const auto* host = static_cast<const std::byte*>(output_host_.data());
  for (const Shape& s : output_shapes_) {
    Tensor t(DType::kF32, s);
    std::memcpy(t.mutable_bytes(), host, t.nbytes());
    host += t.nbytes();
    outputs.push_back(std::move(t));
  }
  return outputs;
}

std::optional<double> CudaModel::time_device_replays(int iterations) {
  require(iterations >= 1, "replays must be >= 1");
  require(exec_ != nullptr, "cuda backend: a profiling engine has no CUDA graph to time");
  EventPair events;
  events.start(stream_);
  for (int i = 0; i < iterations; ++i) check(cudaGraphLaunch(exec_, stream_), "launching the CUDA graph");
  events.stop(stream_);
  return static_cast<double>(events.milliseconds()) / iterations;
}

std::string CudaModel::describe() const {
  std::string text;
  for (const Step& step : steps_) {
    text += cat(step.node == kNoNode ? "-" : node_names_[static_cast<std::size_t>(step.node)], ": ",
                step.label, "\n");
  }
  return text + cat("precision ", elem_ == Elem::kF16 ? "fp16" : "f32", ", activation arena ", arena_.bytes(),
                    " bytes, cuDNN workspace ", workspace_.bytes(), " bytes, ", steps_.size(), " steps in ",
                    options_.profile ? "eager mode (profiling)" : "one CUDA graph",
                    ", tactics: ", tactics_from_plan_, " from the plan",
                    tactics_stale_ > 0 ? cat(" (", tactics_stale_, " stored for another GPU, library or shape)")
                                       : std::string(),
                    ", ", tactic_cache_hits_, " from the cache, ", tactic_searches_,
                    options_.opt_level == 0 ? " heuristic" : " timed", "\n");
}

}  // namespace kiln::cuda
