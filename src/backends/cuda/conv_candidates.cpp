// The ways to run a convolution or linear layer, one per library API, each with its tactic from
// pick_tactic() (tactic.h), and the choice among them.
#include <algorithm>

#include "backends/cuda/conv_graph.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/host_constants.h"
#include "backends/cuda/program_builder.h"

namespace kiln::cuda {

template <class Layer, class Buffers>
std::optional<ProgramBuilder::Candidate> ProgramBuilder::candidate(
    const char* api, std::shared_ptr<Layer> layer, const Buffers& io, bool search_here,
    const std::optional<TacticRecord>& stored) {
  const auto tactic = pick_tactic(*layer, stored, cache_, tactic_search(search_here), io, program_->tactics);
  if (!tactic) return std::nullopt;
  Layer* raw = layer.get();
  const DeviceBuffer* workspace = &program_->workspace;
  return Candidate{api, layer->key(), *tactic, std::move(layer),
                   [workspace, raw, io](cudaStream_t s) { raw->enqueue(io, workspace->data(), s); }};
}

std::optional<ProgramBuilder::Candidate> ProgramBuilder::graph_candidate(
    const ConvLayer& layer, const ConvGeometry& geometry, const ConvBuffers& io, const char* api,
    bool search_here, const std::optional<TacticRecord>& stored) {
  auto conv = std::make_shared<CudnnGraphConv>(handles_.cudnn, elem_, geometry, act_of(layer.activation),
                                               layer.residual, layer.fp8, layer.codes);
  return candidate(api, std::move(conv), io, search_here, stored);
}

std::optional<ProgramBuilder::Candidate> ProgramBuilder::legacy_candidate(
    const ConvLayer& layer, bool search_here, const std::optional<TacticRecord>& stored) {
  auto conv = std::make_shared<CudnnConv>(handles_.cudnn, elem_, layer.geometry, act_of(layer.activation),
                                          layer.residual);
  const std::string key = conv->key();
  std::optional<Candidate> c = candidate(kApiLegacy, std::move(conv), layer.buffers, search_here, stored);
  if (!c) fail("cuda backend: no cuDNN algorithm ran convolution ", key);
  return c;
}

// A grouped convolution with few groups may run faster as one dense convolution over block-diagonal
// weights (zeros between the groups: more arithmetic, better kernels).
std::optional<ProgramBuilder::Candidate> ProgramBuilder::dense_candidate(
    const ConvLayer& layer, const std::optional<TacticRecord>& stored) {
  ConvGeometry dense = layer.geometry;
  dense.groups = 1;
  ConvBuffers io = layer.buffers;
  io.weight = upload_weights(layer, block_diagonal(layer.weights, layer.geometry.c, layer.geometry.groups));
  return graph_candidate(layer, dense, io, kApiDense, true, stored);
}

std::optional<ProgramBuilder::Candidate> ProgramBuilder::cublaslt_candidate(
    const ConvLayer& layer, bool search_here, const std::optional<TacticRecord>& stored) {
  const ConvGeometry& g = layer.geometry;
  auto linear =
      std::make_shared<CublasLtLinear>(handles_.cublaslt, elem_, g.n, g.c, g.k, act_of(layer.activation));
  const ConvBuffers& b = layer.buffers;
  return candidate(kApiCublasLt, std::move(linear), LinearBuffers{b.x, b.weight, b.bias, b.y}, search_here,
                   stored);
}

// kiln's depthwise kernel, its weights taps-major; nothing for other layers.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::depthwise_candidate(
    const ConvLayer& layer, const std::optional<TacticRecord>& stored) {
  if (layer.linear || layer.fp8 || layer.codes || !KilnDepthwiseConv::takes(layer.geometry))
    return std::nullopt;
  ConvBuffers io = layer.buffers;
  io.weight = keep(upload(depthwise_taps(layer.weights), elem_));
  auto conv =
      std::make_shared<KilnDepthwiseConv>(elem_, layer.geometry, act_of(layer.activation), layer.residual);
  return candidate(kApiKilnDepthwise, std::move(conv), io, true, stored);
}

// The plan's tactic, on the library it names where that library may run the layer.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::stored_candidate(const ConvLayer& layer,
                                                                          const StoredTactic& stored) {
  const bool search = options_.opt_level != 0;
  const bool fp16 = elem_ == Elem::kF16;
  const std::optional<TacticRecord> tactic = stored.tactic;
  if (stored.api == kApiGraph && fp16)
    return graph_candidate(layer, layer.geometry, layer.buffers, kApiGraph, search, tactic);
  if (stored.api == kApiLegacy && !layer.fp8 && !layer.codes) return legacy_candidate(layer, search, tactic);
  if (stored.api == kApiDense && fp16 && layer.geometry.groups > 1) return dense_candidate(layer, tactic);
  if (stored.api == kApiCublasLt && layer.linear) return cublaslt_candidate(layer, search, tactic);
  if (stored.api == kApiKilnDepthwise) return depthwise_candidate(layer, tactic);
  return std::nullopt;
}

ProgramBuilder::Candidate ProgramBuilder::choose_candidate(const ConvLayer& layer) {
  const bool search = options_.opt_level != 0;
  const bool fp16 = elem_ == Elem::kF16;
  TacticCounts& counts = program_->tactics;
  std::optional<Candidate> best;
  // The plan's tactic, when it was chosen on this kind of GPU with this library for this very layer.
  const std::optional<StoredTactic> planned = stored_tactic(options_.layer_data, layer.name, device_name_);
  if (!planned && options_.layer_data.contains(layer.name)) ++counts.stale;
  if (planned) {
    std::optional<Candidate> c = stored_candidate(layer, *planned);
    if (c && c->key == planned->key) {
      best = std::move(c);
      ++counts.from_plan;
    } else {
      ++counts.stale;
    }
  }
  const auto consider = [&](std::optional<Candidate> c) {
    if (c && (!best || c->tactic.milliseconds < best->tactic.milliseconds)) best = std::move(c);
  };
  // GEMMs go to cuBLASLt; cuDNN runs a linear layer as a 1x1 convolution only if cuBLASLt cannot.
  if (!best && layer.linear) consider(cublaslt_candidate(layer, search, std::nullopt));
  if (!best) {
    // fp16: cuDNN's graph API (Hopper's kernels) against its legacy API when timing, else the graph
    // API's heuristic choice. f32 stays on the legacy API, whose FMA math type keeps TF32 out.
    // FP8 has no legacy-API path; a grouped FP8 convolution cuDNN has no kernel for runs dense. A layer
    // writing E4M3 codes runs on the graph API only, unfused, where kiln's epilogue kernel writes them.
    const int groups = layer.geometry.groups;
    require(fp16 || !layer.codes, "cuda backend: layer '", layer.name,
            "': E4M3 codes are written by the graph API's unfused path, which needs fp16 storage");
    if (fp16)
      consider(graph_candidate(layer, layer.geometry, layer.buffers, kApiGraph, search, std::nullopt));
    if (!layer.fp8 && !layer.codes && (!best || (search && fp16)))
      consider(legacy_candidate(layer, search, std::nullopt));
    if (fp16 && !layer.linear && groups > 1 &&
        ((search && groups <= 4) || ((layer.fp8 || layer.codes) && !best)))
      consider(dense_candidate(layer, std::nullopt));
    // kiln's depthwise kernel against cuDNN's, by time only.
    if (search) consider(depthwise_candidate(layer, std::nullopt));
  }
  require(best.has_value(), "cuda backend: layer '", layer.name, "': no ", layer.fp8 ? "FP8 " : "",
          "cuDNN or cuBLASLt tactic runs it");
  return std::move(*best);
}

void ProgramBuilder::add_layer_step(const ConvLayer& layer, Candidate chosen) {
  const TacticRecord& t = chosen.tactic;
  workspace_bytes_ = std::max(workspace_bytes_, t.workspace);
  program_->layer_data[layer.name] = tactic_entry({chosen.api, chosen.key, t}, device_name_);
  program_->layers.push_back(chosen.layer);
  add_step(
      layer.reported,
      cat(layer.linear ? "linear "
          : layer.fp8  ? "fp8 conv "
                       : "conv ",
          chosen.api, t.fused ? " fused" : " + epilogue kernel", " #", t.algorithm, " act ",
          activation_name(layer.activation), layer.residual ? " +residual" : "", codes_label(layer.producer),
          t.milliseconds > 0 ? cat(" (", t.milliseconds * 1000.0, " us)") : std::string()),
      std::move(chosen.launch));
}

}  // namespace kiln::cuda
