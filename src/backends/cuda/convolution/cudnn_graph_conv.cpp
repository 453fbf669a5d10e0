#include "backends/cuda/convolution/cudnn_graph_conv.h"

#include <algorithm>

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels/elementwise_kernels.h"
#include "backends/cuda/kernels/quantization_kernels.h"

namespace kiln::cuda {
namespace {

// Tensor ids of the variant pack.
constexpr std::int64_t kX = 1, kW = 2, kBias = 3, kResidual = 4, kY = 5, kScale = 6;
// Candidates timed per graph (heuristics rank the best first).
// A serialized plan larger than this is not kept (plans and tactic caches stay small); it is compiled
// again when restored.
constexpr std::int64_t kMaxCompiledBytes = std::int64_t{8} << 20;

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         std::int64_t count, const void* value) {
  check(cudnnBackendSetAttribute(d, name, type, count, value), "setting a cuDNN graph attribute");
}

// NHWC strides of logical [n, c, h, w] dims, `pitch` elements from one pixel to the next (0: packed).
std::vector<std::int64_t> nhwc_strides(const std::vector<std::int64_t>& d, std::int64_t pitch) {
  const std::int64_t p = pitch > 0 ? pitch : d[1];
  return {p * d[2] * d[3], 1, d[3] * p, p};
}

// cuDNN's pointwise mode of an activation stage.
cudnnPointwiseMode_t activation_mode(Act act) {
  switch (act) {
    case Act::kRelu:
      return CUDNN_POINTWISE_RELU_FWD;
    case Act::kSilu:
      return CUDNN_POINTWISE_SWISH_FWD;  // x * sigmoid(beta * x), beta set to 1
    case Act::kSigmoid:
      return CUDNN_POINTWISE_SIGMOID_FWD;
    case Act::kNone:
      break;
  }
  fail("cuda backend: no cuDNN pointwise stage for activation ", static_cast<int>(act));
}

}  // namespace

CudnnGraphConv::CudnnGraphConv(cudnnHandle_t handle, Elem elem, const ConvGeometry& g, Act act, bool residual,
                               bool fp8, bool codes, std::size_t engines, bool runtime_fusion, bool fp8_runtime)
    : handle_(handle), elem_(elem), g_(g), act_(act), residual_(residual), fp8_(fp8), engines_(engines) {
  fp8_runtime_ = fp8 && fp8_runtime;
  // SiLU and sigmoid fuse as pointwise stages too; FP8 layers keep fusing only what they always did.
  // cuDNN's fused stages compute in f32 and cannot round to fp16 before quantizing: codes run unfused.
  can_fuse_ = !codes && (act == Act::kNone || act == Act::kRelu ||
                         (!fp8 && (act == Act::kSilu || act == Act::kSigmoid)));
  runtime_fusion_ = can_fuse_ && elem == Elem::kF16 && (act == Act::kSilu || act == Act::kSigmoid) &&
                    engines >= kGraphEngines && runtime_fusion;
  // A layer writing codes ends in "e4m3", as kiln's Hopper kernel's do.
  key_ = tactic_key({.runner = kApiGraph,
                     .version = std::to_string(cudnnGetVersion()),
                     .precision = fp8 ? "fp8" : elem_name(elem),
                     .geometry = g,
                     .act = act,
                     .residual = residual,
                     .variant = key_fields({engines < kGraphEngines ? cat("engines", engines) : "",
                                            runtime_fusion_ ? "rtf" : "", codes ? "e4m3" : "",
                                            fp8 && !fp8_runtime ? "precompiled" : ""})});
}

CudnnGraphConv::~CudnnGraphConv() {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
}

CudnnGraphConv::Desc CudnnGraphConv::make(cudnnBackendDescriptorType_t type) {
  Desc d = nullptr;
  check(cudnnBackendCreateDescriptor(type, &d), "creating a cuDNN graph descriptor");
  owned_.push_back(d);
  return d;
}

CudnnGraphConv::Desc CudnnGraphConv::tensor(std::int64_t uid, const std::vector<std::int64_t>& dims,
                                            cudnnDataType_t type, bool is_virtual, std::int64_t pitch) {
  Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::vector<std::int64_t> strides = nhwc_strides(dims, pitch);
  const std::int64_t alignment = 16;
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  check(cudnnBackendFinalize(t), "finalizing a cuDNN tensor");
  return t;
}

CudnnGraphConv::Desc CudnnGraphConv::operation_graph(bool fused) {
  const cudnnDataType_t io = elem_ == Elem::kF32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const cudnnDataType_t operands = fp8_ ? CUDNN_DATA_FP8_E4M3 : io;
  const std::vector<std::int64_t> x_dims{g_.n, g_.c, g_.h, g_.w}, w_dims{g_.k, g_.c / g_.groups, g_.r, g_.s},
      y_dims{g_.n, g_.k, g_.out_h, g_.out_w};
  Desc x = tensor(kX, x_dims, operands, false, g_.x_pitch);
  Desc w = tensor(kW, w_dims, operands, false);
  // Unfused FP8: the convolution's own output is the f32 accumulator kiln's epilogue kernel reads.
  Desc y = tensor(kY, y_dims, fp8_ && !fused ? f32 : io, false, g_.y_pitch);

  Desc conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const std::int64_t spatial = 2;
  const std::int64_t pads[2] = {g_.pad_h, g_.pad_w}, strides[2] = {g_.stride_h, g_.stride_w},
                     dilations[2] = {g_.dilation_h, g_.dilation_w};
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
  check(cudnnBackendFinalize(conv), "finalizing a cuDNN convolution");

  std::vector<Desc> ops;
  // Without fusion the convolution writes y; with it, an f32 virtual tensor the epilogue reads.
  const bool has_epilogue = fused;
  Desc conv_out = has_epilogue ? tensor(101, y_dims, f32, true) : y;
  Desc op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float one = 1.0f, zero = 0.0f;
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_out);
  check(cudnnBackendFinalize(op), "finalizing a cuDNN convolution operation");
  ops.push_back(op);

  if (has_epilogue) add_epilogue(conv_out, y, y_dims, ops);

  Desc graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      static_cast<std::int64_t>(ops.size()), ops.data());
  check(cudnnBackendFinalize(graph), "finalizing a cuDNN operation graph");
  return graph;
}

// Pointwise stages after the convolution: [x scale], + bias, [+ residual], [activation], in the
// reference's order (the activation of a residual add applies to the sum); the last one writes y.
void CudnnGraphConv::add_epilogue(Desc conv_out, Desc y, const std::vector<std::int64_t>& y_dims,
                                  std::vector<Desc>& ops) {
  const cudnnDataType_t io = elem_ == Elem::kF32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const std::vector<std::int64_t> b_dims{1, g_.k, 1, 1};
  struct Stage {
    cudnnPointwiseMode_t mode;
    Desc operand;  // null for unary stages
  };
  std::vector<Stage> stages;
  if (fp8_) stages.push_back({CUDNN_POINTWISE_MUL, tensor(kScale, b_dims, f32, false)});
  stages.push_back({CUDNN_POINTWISE_ADD, tensor(kBias, b_dims, fp8_ ? f32 : io, false)});
  if (residual_)
    stages.push_back({CUDNN_POINTWISE_ADD, tensor(kResidual, y_dims, io, false, g_.residual_pitch)});
  if (act_ != Act::kNone) stages.push_back({activation_mode(act_), nullptr});
  Desc in = conv_out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const bool last = i + 1 == stages.size();
    Desc out = last ? y : tensor(102 + static_cast<std::int64_t>(i), y_dims, f32, true);
    Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &stages[i].mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    if (stages[i].mode == CUDNN_POINTWISE_SWISH_FWD) {
      const double beta = 1.0;  // SiLU
      set(pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta);
    }
    check(cudnnBackendFinalize(pw), "finalizing a cuDNN pointwise descriptor");
    Desc pw_op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    set(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in);
    if (stages[i].operand != nullptr) {
      set(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &stages[i].operand);
    }
    set(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out);
    check(cudnnBackendFinalize(pw_op), "finalizing a cuDNN pointwise operation");
    ops.push_back(pw_op);
    in = out;
  }
}

std::vector<CudnnGraphConv::Config> CudnnGraphConv::configs(Desc graph, bool fused) {
  Desc heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heuristics) != CUDNN_STATUS_SUCCESS) return {};
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                               &count, nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    return {};
  }
  std::vector<Desc> all;
  for (std::int64_t i = 0; i < count; ++i) all.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  std::int64_t returned = 0;
  if (cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               count, &returned, all.data()) != CUDNN_STATUS_SUCCESS) {
    return {};
  }
  all.resize(static_cast<std::size_t>(std::max<std::int64_t>(returned, 0)));
  std::vector<Config> kept;
  std::size_t runtime_fused = 0;
  for (Desc config : all) {
    Desc engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    std::int64_t n = 0;
    if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                 &engine) != CUDNN_STATUS_SUCCESS) {
      continue;
    }
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    std::int64_t note_count = 0;
    bool runtime_compiled = false;
    if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &note_count,
                                 notes) == CUDNN_STATUS_SUCCESS) {
      for (std::int64_t i = 0; i < note_count; ++i)
        runtime_compiled |= notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    }
    if (!runtime_compiled || fp8_runtime_) {
      kept.push_back({config, runtime_compiled});
    } else if (fused && runtime_fusion_ && runtime_fused < kRuntimeFusedEngines) {
      kept.push_back({config, true});
      ++runtime_fused;
    }
  }
  return kept;
}

std::optional<CudnnGraphConv::Desc> CudnnGraphConv::plan(Desc config) {
  Desc p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
  if (cudnnBackendFinalize(p) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return p;
}

bool CudnnGraphConv::launch(bool fused, Desc p, const ConvBuffers& b, void* workspace, cudaStream_t stream) {
  std::vector<std::int64_t> uids{kX, kW, kY};
  std::vector<void*> pointers{const_cast<void*>(b.x), const_cast<void*>(b.weight),
                              fp8_ && !fused ? static_cast<void*>(b.accumulator) : b.y};
  if (fused) {
    if (fp8_) {
      uids.push_back(kScale);
      pointers.push_back(const_cast<float*>(b.scale));
    }
    uids.push_back(kBias);
    pointers.push_back(const_cast<void*>(b.bias));
    if (residual_) {
      uids.push_back(kResidual);
      pointers.push_back(const_cast<void*>(b.residual));
    }
  }
  Desc pack = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack) != CUDNN_STATUS_SUCCESS)
    return false;
  bool ok =
      cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                               static_cast<std::int64_t>(uids.size()), uids.data()) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                               static_cast<std::int64_t>(pointers.size()),
                               pointers.data()) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnBackendFinalize(pack) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendExecute(handle_, p, pack) == CUDNN_STATUS_SUCCESS;
  cudnnBackendDestroyDescriptor(pack);
  const std::int64_t rows = static_cast<std::int64_t>(g_.n) * g_.out_h * g_.out_w;
  if (ok && !fused && fp8_) {
    ok = scale_bias_act(b.accumulator, b.scale, static_cast<const float*>(b.bias), b.residual, b.y, elem_,
                        rows, g_.k, act_, stream, b.codes) == cudaSuccess;
  } else if (ok && !fused) {
    ok = add_bias_act(b.y, b.residual, b.bias, b.y, elem_, rows, g_.k, act_, stream, b.codes) == cudaSuccess;
  }
  return ok;
}

std::optional<CudnnGraphConv::Desc> CudnnGraphConv::try_operation_graph(bool fused) {
  try {
    return operation_graph(fused);
  } catch (const Error&) {
    return std::nullopt;
  }
}

void CudnnGraphConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                                      std::size_t workspace_limit) {
  // The fused graph first: with heuristics only, its first working engine is taken.
  for (const bool fused : {true, false}) {
    if (fused && !can_fuse_) continue;
    if (!fused && !g_.packed()) continue;  // kiln's epilogue kernels read and write packed tensors
    const std::optional<Desc> graph = try_operation_graph(fused);
    if (!graph) continue;
    const std::vector<Config> candidates = configs(*graph, fused);
    std::size_t tried = 0;
    for (std::size_t index = 0; index < candidates.size() && tried < engines_; ++index) {
      const auto p = plan(candidates[index].desc);
      if (!p) continue;
      std::int64_t bytes = 0, n = 0;
      if (cudnnBackendGetAttribute(*p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &bytes) != CUDNN_STATUS_SUCCESS ||
          static_cast<std::size_t>(bytes) > workspace_limit) {
        continue;
      }
      ++tried;
      const Tactic tactic{fused,
                          candidates[index].runtime_compiled,
                          static_cast<int>(index),
                          static_cast<std::size_t>(bytes),
                          0,
                          *p};
      const auto run = [&](cudaStream_t s) { return launch(fused, *p, buffers, workspace, s); };
      if (!race.offer(tactic, run)) return;
    }
  }
}

namespace {

// cuDNN's JSON of an execution plan; empty where it gives none or it exceeds kMaxCompiledBytes.
std::string serialized_plan(cudnnBackendDescriptor_t plan) {
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0,
                               &count, nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0 || count > kMaxCompiledBytes) {
    return {};
  }
  std::string json(static_cast<std::size_t>(count), '\0');
  if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, count,
                               &count, json.data()) != CUDNN_STATUS_SUCCESS) {
    return {};
  }
  json.resize(std::min(json.size(), static_cast<std::size_t>(std::max<std::int64_t>(count, 0))));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  return json;
}

}  // namespace

TacticRecord CudnnGraphConv::record(const Tactic& t) const {
  TacticRecord r{t.fused, t.engine, t.workspace, t.milliseconds, {}};
  // Runtime-compiled engines (configs()) keep their kernel; the precompiled ones restore fast anyway.
  if (t.runtime_compiled) r.compiled = serialized_plan(t.plan);
  return r;
}

std::optional<CudnnGraphConv::Desc> CudnnGraphConv::deserialized_plan(const std::string& json) {
  Desc p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
  if (cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                               static_cast<std::int64_t>(json.size()), json.data()) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(p) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  return p;
}

bool CudnnGraphConv::restore(const TacticRecord& stored) {
  if (stored.fused && !can_fuse_) return false;
  // A serialized plan comes back without compiling; one cuDNN no longer takes is compiled afresh.
  if (!stored.compiled.empty()) {
    if (const std::optional<Desc> p = deserialized_plan(stored.compiled)) {
      tactic_ = {stored.fused, true, stored.algorithm, stored.workspace, stored.milliseconds, *p};
      return true;
    }
  }
  const std::optional<Desc> graph = try_operation_graph(stored.fused);
  if (!graph) return false;
  const std::vector<Config> candidates = configs(*graph, stored.fused);
  if (stored.algorithm < 0 || static_cast<std::size_t>(stored.algorithm) >= candidates.size()) return false;
  const Config& config = candidates[static_cast<std::size_t>(stored.algorithm)];
  const auto p = plan(config.desc);
  if (!p) return false;
  tactic_ = {stored.fused,     config.runtime_compiled, stored.algorithm,
             stored.workspace, stored.milliseconds,     *p};
  return true;
}

void CudnnGraphConv::enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) {
  require(launch(tactic_.fused, tactic_.plan, buffers, workspace, stream),
          "cuda backend: running convolution ", key_, " on cuDNN's graph API failed");
}

}  // namespace kiln::cuda
