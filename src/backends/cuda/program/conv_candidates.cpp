// The ways to run a convolution or linear layer (convolution/: one per library API, and kiln's kernels),
// each with its tactic from pick_tactic() (tactic.h), and the choice among them.
#include <algorithm>
#include <span>

#include "backends/cuda/convolution/cublaslt_fp8_conv.h"
#include "backends/cuda/convolution/cublaslt_linear.h"
#include "backends/cuda/convolution/cudnn_graph_conv.h"
#include "backends/cuda/kernels/host_constants.h"
#include "backends/cuda/kernels/quantization_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

namespace {

// Ends the key of a layer's tactic that runs followed by the quantize kernel.
constexpr const char* kThenQuantizeKey = "+quantize-kernel";

}  // namespace

template <class Layer, class Buffers>
std::optional<ProgramBuilder::Candidate> ProgramBuilder::candidate(
    const char* api, std::shared_ptr<Layer> layer, const Buffers& io, bool search_here,
    const std::optional<TacticRecord>& stored) {
  const auto tactic = pick_tactic(*layer, stored, cache_, tactic_search(search_here), io, program_->tactics);
  if (!tactic) return std::nullopt;
  Layer* raw = layer.get();
  const DeviceBuffer* workspace = &program_->workspace;
  return Candidate{api,
                   layer->key(),
                   *tactic,
                   std::move(layer),
                   [workspace, raw, io](cudaStream_t s) { raw->enqueue(io, workspace->data(), s); },
                   {}};
}

std::optional<ProgramBuilder::Candidate> ProgramBuilder::graph_candidate(
    const ConvLayer& layer, const ConvGeometry& geometry, const ConvBuffers& io, const char* api,
    bool search_here, const std::optional<TacticRecord>& stored, bool fp8_runtime) {
  auto conv = std::make_shared<CudnnGraphConv>(handles_.cudnn, elem_, geometry, act_of(layer.activation),
                                               layer.residual, layer.fp8, layer.codes, graph_engines(),
                                               cuda_.runtime_fusion, fp8_runtime);
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

// An FP8 pointwise convolution as one cuBLASLt FP8 GEMM (cublaslt_fp8_conv.h), writing fp16 y. A layer
// writing E4M3 codes gets nothing here: it races as the GEMM followed by the quantize kernel
// (choose_candidate()). Nothing either for layers it does not compute (not FP8, or a shape or activation it
// does not take) or with the fp8-gemm option off.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::fp8_gemm_candidate(
    const ConvLayer& layer, bool search_here, const std::optional<TacticRecord>& stored,
    std::string_view stored_key) {
  const ConvGeometry& g = layer.geometry;
  const Act act = act_of(layer.activation);
  const ConvBuffers& b = layer.buffers;
  if (!layer.fp8 || elem_ != Elem::kF16 || layer.codes || b.y == nullptr ||
      cuda_.fp8_gemm == Fp8GemmChoice::kOff || !CublasLtFp8Conv::takes(g, act)) {
    return std::nullopt;
  }
  // cuBLASLt's FP8 kernels with an fp16 C take an fp16 bias.
  const Tensor bias = bias_of(*layer.node, g.k);
  const Fp8GemmBuffers io{b.x, b.weight, keep(upload(bias, Elem::kF16)), b.residual, b.y};
  const Fp8GemmScales scales = fp8_gemm_scales(layer);
  // The outer-vector scales where cuBLASLt runs them, else the per-row alpha, else (one scale for every
  // channel) the tensor-wide scale (cublaslt_fp8_conv.h).
  for (const Fp8Scaling scaling : {Fp8Scaling::kOuterVector, Fp8Scaling::kAlphaVector, Fp8Scaling::kScalar}) {
    if (scaling == Fp8Scaling::kScalar && !scales.uniform) continue;
    const Fp8GemmConfig config{act, layer.residual, scaling};
    auto gemm = std::make_shared<CublasLtFp8Conv>(handles_.cublaslt, g, config, scales);
    if (stored && gemm->key() != stored_key) continue;  // a plan's tactic restores its own variant only
    if (auto c = candidate(kApiCublasLtFp8, std::move(gemm), io, search_here, stored)) return c;
  }
  return std::nullopt;
}

// The constants an FP8 GEMM of `layer` reads besides its buffers (cublaslt_fp8_conv.h), on the device.
Fp8GemmScales ProgramBuilder::fp8_gemm_scales(const ConvLayer& layer) {
  const ConvGeometry& g = layer.geometry;
  Fp8GemmScales scales;
  scales.channel = layer.buffers.scale;
  // The channel scales are the input's times the weights': one weight scale, one channel scale.
  const Node& dequantize = graph_.node(graph_.value(layer.node->inputs[1]).producer);
  const Tensor weight_scales = constant(dequantize.inputs[1]).to(DType::kF32);
  const std::span<const float> w = weight_scales.f32();
  scales.uniform = std::ranges::all_of(w, [&](float v) { return v == w.front(); });
  // B's outer-vector scale is a factor per row of x, all ones: the input's scale is in A's per-channel
  // vector.
  Tensor ones(DType::kF32, {std::int64_t{g.n} * g.out_h * g.out_w});
  std::ranges::fill(ones.mutable_f32(), 1.0f);
  scales.row = static_cast<const float*>(keep(upload(ones, Elem::kF32)));
  return scales;
}

// fp8-gemm=only: a layer the GEMM takes offers nothing but the GEMM. One writing codes then runs as the
// GEMM followed by the quantize kernel (choose_candidate()). Where cuBLASLt offers no algorithm the others
// still serve.
bool ProgramBuilder::fp8_gemm_only(const ConvLayer& layer, bool offered) const {
  if (cuda_.fp8_gemm != Fp8GemmChoice::kOnly || !layer.fp8) return false;
  return offered || (layer.codes && elem_ == Elem::kF16 &&
                     CublasLtFp8Conv::takes(layer.geometry, act_of(layer.activation)));
}

// One of kiln's kernels (kiln_kernels.h) where it runs the layer.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::kiln_candidate(
    const ConvLayer& layer, const KilnConvKernel& kernel, const std::optional<TacticRecord>& stored) {
  if (reads_residual_codes(layer) && kernel.api != std::string_view(kApiKilnHopper)) return std::nullopt;
  const KilnConvRequest request{layer,
                                elem_,
                                device_name_,
                                cuda_,
                                [this](const Tensor& t, Elem e) { return keep(upload(t, e)); },
                                [this, &layer](const Tensor& t) { return upload_weights(layer, t); }};
  std::optional<KilnConvOffer> offer = kernel.offer(request);
  if (!offer) return std::nullopt;
  return candidate(kernel.api, std::move(offer->conv), offer->buffers, true, stored);
}

// How many engine configurations of each cuDNN graph a timed search tries, by optimization level: 1 at
// level 1, 2 at level 2, kGraphEngines from level 3 (FP8 engines compile at run time, so this is most of
// an FP8 build's time).
std::size_t ProgramBuilder::graph_engines() const {
  return options_.opt_level >= 3 ? kGraphEngines
                                 : static_cast<std::size_t>(std::max<std::int64_t>(options_.opt_level, 1));
}

bool ProgramBuilder::runtime_fused_convs() const {
  return elem_ == Elem::kF16 && graph_engines() >= kGraphEngines && cuda_.runtime_fusion;
}

// The plan's tactic, on the library it names where that library may run the layer.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::stored_candidate(const ConvLayer& layer,
                                                                          const StoredTactic& stored) {
  const bool search = options_.opt_level != 0;
  const bool fp16 = elem_ == Elem::kF16;
  const std::optional<TacticRecord> tactic = stored.tactic;
  if (layer.int8 || layer.buffers.int8_codes()) {  // kiln's Hopper kernel only
    const KilnConvKernel* hopper = find_kiln_conv_kernel(kApiKilnHopper);
    return stored.api == kApiKilnHopper && hopper ? kiln_candidate(layer, *hopper, tactic) : std::nullopt;
  }
  if (stored.api == kApiGraph && fp16 && !reads_residual_codes(layer))
    return graph_candidate(layer, layer.geometry, layer.buffers, kApiGraph, search, tactic);
  const KilnConvKernel* kiln = find_kiln_conv_kernel(stored.api);
  if (kiln && (kiln->views || layer.geometry.packed())) return kiln_candidate(layer, *kiln, tactic);
  // Of the libraries only cuDNN's graph API takes views, and none reads a residual of codes.
  if (!layer.geometry.packed() || reads_residual_codes(layer)) return std::nullopt;
  if (stored.api == kApiLegacy && !layer.fp8 && !layer.codes) return legacy_candidate(layer, search, tactic);
  if (stored.api == kApiDense && fp16 && layer.geometry.groups > 1) return dense_candidate(layer, tactic);
  if (stored.api == kApiCublasLt && layer.linear) return cublaslt_candidate(layer, search, tactic);
  if (stored.api == kApiCublasLtFp8) return fp8_gemm_candidate(layer, search, tactic, stored.key);
  return std::nullopt;
}

// The plan's tactic, when it was chosen on this kind of GPU with this library for this very layer. A
// layer writing codes whose stored tactic won the race followed by the quantize kernel (its key says so:
// then_quantize()) runs that way again. A tactic chosen while the layer wrote no codes (the fp16 compile
// the precision tactic takes a kept layer's tactic from) says nothing of that race, which runs anew.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::planned_candidate(const ConvLayer& layer) {
  TacticCounts& counts = program_->tactics;
  const std::optional<StoredTactic> planned = stored_tactic(options_.layer_data, layer.name, device_name_);
  if (!planned) {
    if (options_.layer_data.contains(layer.name)) ++counts.stale;
    return std::nullopt;
  }
  std::optional<Candidate> c = stored_candidate(layer, *planned);
  if ((!c || c->key != planned->key) && layer.codes && planned->key.ends_with(kThenQuantizeKey)) {
    // The tactic itself was stored under its own key, which candidates that check a stored key (the FP8
    // GEMM's variants) compare against.
    StoredTactic plain = *planned;
    plain.key.resize(plain.key.size() - std::string_view(kThenQuantizeKey).size());
    c = stored_candidate(without_codes(layer), plain);
    if (c) c = then_quantize(layer, std::move(*c), false);
  }
  if (!c || c->key != planned->key) {
    ++counts.stale;
    return std::nullopt;
  }
  ++counts.from_plan;
  return c;
}

// The library's heuristic choice, or the fastest candidate when timing.
std::optional<ProgramBuilder::Candidate> ProgramBuilder::searched_candidate(const ConvLayer& layer) {
  const bool search = options_.opt_level != 0;
  const bool fp16 = elem_ == Elem::kF16;
  std::optional<Candidate> best;
  const auto consider = [&](std::optional<Candidate> c) {
    if (c && (!best || c->tactic.milliseconds < best->tactic.milliseconds)) best = std::move(c);
  };
  // int8 operands, int8 codes written or a residual of codes: kiln's Hopper kernel only.
  if (layer.int8 || layer.buffers.int8_codes() || reads_residual_codes(layer)) {
    if (const KilnConvKernel* hopper = find_kiln_conv_kernel(kApiKilnHopper))
      consider(kiln_candidate(layer, *hopper, std::nullopt));
    return best;
  }
  // GEMMs go to cuBLASLt; cuDNN runs a linear layer as a 1x1 convolution only if cuBLASLt cannot.
  if (layer.linear) consider(cublaslt_candidate(layer, search, std::nullopt));
  if (best) return best;
  // An FP8 pointwise convolution is one cuBLASLt FP8 GEMM, raced against cuDNN's graph API (the first
  // offered wins without timing).
  if (layer.fp8) {
    std::optional<Candidate> gemm = fp8_gemm_candidate(layer, search, std::nullopt);
    if (fp8_gemm_only(layer, gemm.has_value())) return gemm;
    consider(std::move(gemm));
  }
  // An FP8 layer kiln's Hopper kernel runs races it against cuDNN's precompiled engines only: the
  // runtime-compiled ones, which compile for most of a cold FP8 build's time, serve the layers it does not
  // run.
  const KilnConvKernel* hopper = layer.fp8 && search ? find_kiln_conv_kernel(kApiKilnHopper) : nullptr;
  bool hopper_runs = false;
  if (hopper != nullptr) {
    std::optional<Candidate> c = kiln_candidate(layer, *hopper, std::nullopt);
    hopper_runs = c.has_value();
    consider(std::move(c));
  }
  // fp16: cuDNN's graph API (Hopper's kernels) against its legacy API when timing, else the graph
  // API's heuristic choice. f32 stays on the legacy API, whose FMA math type keeps TF32 out.
  // FP8 has no legacy-API path; a grouped FP8 convolution cuDNN has no kernel for runs dense. A layer
  // writing E4M3 codes runs on the graph API only, unfused, where kiln's epilogue kernel writes them.
  const int groups = layer.geometry.groups;
  if (fp16) {
    consider(
        graph_candidate(layer, layer.geometry, layer.buffers, kApiGraph, search, std::nullopt, !hopper_runs));
  }
  // kiln's kernels against the libraries', by time only; those taking views first.
  const auto consider_kiln = [&](bool views) {
    for (const KilnConvKernel& kernel : kiln_conv_kernels()) {
      if (search && kernel.views == views && &kernel != hopper)
        consider(kiln_candidate(layer, kernel, std::nullopt));
    }
  };
  consider_kiln(true);
  if (!layer.geometry.packed()) return best;  // the rest take no views (channel_views.h)
  // Level 1 races the legacy API and the dense form only where nothing else runs the layer.
  const bool wide = options_.opt_level >= 2;
  if (!layer.fp8 && !layer.codes && (!best || (search && wide && fp16)))
    consider(legacy_candidate(layer, search, std::nullopt));
  if (fp16 && !layer.linear && groups > 1 &&
      ((search && wide && groups <= 4) || ((layer.fp8 || layer.codes) && !best)))
    consider(dense_candidate(layer, std::nullopt));
  consider_kiln(false);
  return best;
}

ProgramBuilder::Candidate ProgramBuilder::choose_candidate(const ConvLayer& layer) {
  if (std::optional<Candidate> planned = planned_candidate(layer)) return std::move(*planned);
  std::optional<Candidate> best = searched_candidate(layer);
  // A layer writing codes races its candidates that write them against the others followed by the
  // quantize kernel, each timed with all it runs; without timing the others serve only where none
  // writes them.
  const bool search = options_.opt_level != 0;
  if (layer.codes && (!best || search)) {
    if (std::optional<Candidate> plain = searched_candidate(without_codes(layer))) {
      Candidate alternative = then_quantize(layer, std::move(*plain), search);
      if (!best || alternative.tactic.milliseconds < best->tactic.milliseconds) best = std::move(alternative);
    }
  }
  require(
      best.has_value(), "cuda backend: layer '", layer.name, "': no ",
      layer.int8  ? "int8 "
      : layer.fp8 ? "FP8 "
                  : "",
      layer.int8 ? "tactic runs it (only kiln's Hopper kernel runs int8 layers)"
                 : "cuDNN or cuBLASLt tactic runs it",
      layer.geometry.packed() ? ""
                              : " on channel views (--cuda-option channel-views=off builds without them)",
      reads_residual_codes(layer)
          ? cat(" with its residual in ", layer.buffers.residual_int8 ? "int8" : "E4M3",
                " (only kiln's Hopper kernel reads one: an sm_90 GPU; build without --quantize-residuals)")
          : "");
  return std::move(*best);
}

bool ProgramBuilder::reads_residual_codes(const ConvLayer& layer) {
  return layer.buffers.residual_codes_scale > 0;
}

// `layer` writing its output only (kiln's quantize kernel then writes the codes from it).
ConvLayer ProgramBuilder::without_codes(const ConvLayer& layer) const {
  ConvLayer plain = layer;
  plain.codes = false;
  plain.buffers.codes = {};
  plain.buffers.y = ptr(graph_.node(layer.producer).output);
  return plain;
}

// `c` followed by the quantize kernel from its output into `layer`'s codes, timed together when timing.
// Its key is `c`'s marked as followed by the quantize kernel, so that a plan records which of the two
// ways the layer writes its codes.
ProgramBuilder::Candidate ProgramBuilder::then_quantize(const ConvLayer& layer, Candidate c, bool timed) {
  const ValueId value = graph_.node(layer.producer).output;
  const void* y = ptr(value);
  const CodesOut codes = layer.buffers.codes;
  const bool int8 = layer.buffers.int8_codes();
  const std::int64_t count = shape_numel(shape(value));
  const Elem e = elem_;
  const auto quantize = [=](cudaStream_t s) { return quantize_codes(y, e, codes, count, s); };
  if (timed) {
    const std::optional<double> ms =
        try_candidate(true, handles_.stream, [&](cudaStream_t s) { return quantize(s) == cudaSuccess; });
    require(ms.has_value(), "cuda backend: layer '", layer.name, "': the quantize kernel did not run");
    c.tactic.milliseconds += *ms;
  }
  c.quantize_kernel = [quantize, int8](cudaStream_t s) {
    check(quantize(s), int8 ? "quantizing to int8" : "quantizing to E4M3");
  };
  c.key = cat(c.key, kThenQuantizeKey);
  return c;
}

void ProgramBuilder::add_layer_step(const ConvLayer& layer, Candidate chosen) {
  const TacticRecord& t = chosen.tactic;
  workspace_bytes_ = std::max(workspace_bytes_, t.workspace);
  program_->layer_data[layer.name] = tactic_entry({chosen.api, chosen.key, t}, device_name_);
  program_->layers.push_back(chosen.layer);
  const bool gemm = chosen.api == kApiCublasLtFp8;
  add_step(
      layer.reported,
      cat(layer.linear ? "linear "
          : gemm       ? "fp8 gemm (cuBLASLt) "
          : layer.fp8  ? "fp8 conv "
          : layer.int8 ? "int8 conv "
                       : "conv ",
          chosen.api,
          !t.fused             ? " + epilogue kernel"
          : t.compiled.empty() ? " fused"
                               : " fused, runtime-compiled",
          " #", t.algorithm, " act ", activation_name(layer.activation), layer.residual ? " +residual" : "",
          codes_label(layer.producer), chosen.quantize_kernel ? " (quantize kernel)" : "",
          t.milliseconds > 0 ? cat(" (", t.milliseconds * 1000.0, " us)") : std::string()),
      std::move(chosen.launch));
  if (chosen.quantize_kernel) {
    add_step(layer.reported,
             cat("quantize to ", layer.buffers.int8_codes() ? "int8" : "E4M3", " (after ", chosen.api, ")"),
             std::move(chosen.quantize_kernel));
    program_->steps.back().reported_op = OpKind::kQuantize;
  }
}

}  // namespace kiln::cuda
