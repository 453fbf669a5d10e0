// A backend turns a graph into something that runs (ggml's split: supports / compile / execute).
// The CPU reference backend supports every operator and is the fallback; faster backends compile
// what they support and say so per node.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

class Device;  // backends/device.h

// Time spent in one layer over a profiled run.
struct LayerTime {
  std::string name;  // node name, e.g. "layer1.0.conv2.conv"
  OpKind op;
  double milliseconds = 0.0;
};

// A backend's own build options, NAME -> VALUE (`kiln build --cuda-option NAME=VALUE`). A plan records
// the complete set its build resolved (Backend::resolve_options), so that it runs the way it was built.
using BackendOptions = std::map<std::string, std::string>;

struct CompileOptions {
  std::int64_t batch = 1;  // compiled models run this batch size only
  int threads = 0;         // 0: the choice made at start (one per core on an idle machine)
  bool profile = false;    // record per-layer times on every run
  // Tactic search effort of backends that time kernels at compile time (cuda): 0 takes the library's
  // heuristic choice, anything else times the candidates. -1: the plan's optimization level (Engine).
  std::int64_t opt_level = -1;
  std::string tactic_cache;  // file of timed tactics reused across compiles; empty: none
  // What an earlier compile on this backend chose per layer (CompiledModel::layer_data, as a plan stores
  // it, keyed by node name). Entries that no longer apply (another GPU, library or shape) are ignored
  // and those layers chosen afresh.
  std::map<std::string, nlohmann::json> layer_data;
  // Refuse a graph with a node the backend does not support instead of running that node on the CPU
  // fallback (Engine, compile_with_fallback in runtime/partitioned_model.h).
  bool strict_backend = false;
  // The backend's own options (Backend::resolve_options); empty: its defaults. Engine takes the plan's
  // record when none are given.
  BackendOptions backend_options;
};

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  // One f32 NCHW tensor per graph input, in graph order; returns the graph outputs (f32).
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  // Runs on device memory the caller owns, enqueued on the caller's stream and not waited for: one f32
  // buffer per graph input and output, in graph order, already checked against the graph's shapes
  // (cuda: CUDA device pointers and a cudaStream_t). Host backends refuse.
  virtual void run_device(const std::vector<const void*>& /*inputs*/, const std::vector<void*>& /*outputs*/,
                          void* /*stream*/) {
    throw Error("device buffers need the cuda backend; this engine runs on host buffers");
  }
  // Per-layer times of the last run (empty unless compiled with profile = true).
  virtual std::vector<LayerTime> last_profile() const = 0;
  // Backends that run asynchronously on a device time themselves: `iterations` back-to-back replays of
  // the whole network on the device, bracketed by device events; returns milliseconds per replay.
  // Empty for host backends, whose run() the host clock times.
  virtual std::optional<double> time_device_replays(int /*iterations*/) { return std::nullopt; }
  // What was compiled, one line per step (empty if the backend does not say).
  virtual std::string describe() const { return {}; }
  // What the compile chose per layer, keyed by node name, for a plan to store (the cuda backend: each
  // layer's tactic); empty on backends that choose nothing.
  virtual std::map<std::string, nlohmann::json> layer_data() const { return {}; }
};

// One fact about what a backend runs on, for reports: {"gpu", "GPU", "NVIDIA H200 (sm_90, 140 GiB)"}.
struct BackendFact {
  std::string key;    // stable, for JSON ("gpu", "cudnn")
  std::string label;  // for people ("GPU", "cuDNN")
  std::string value;
  // Says how this process runs (its threads' waiting, chosen from the machine's load at start), not what
  // a plan's kernels are: bench and study tables show it, plans do not record it, so that building the
  // same plan twice gives the same bytes.
  bool of_this_process = false;
};

// A precision a backend runs faster than the one asked for, with results as close to fp32, and why (one
// line, naming what on this machine decided it).
struct PrecisionAdvice {
  Precision precision = Precision::kF32;
  std::string reason;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports(const Graph& graph, const Node& node) const = 0;
  // Why the backend does not support `node`, or empty when it does.
  virtual std::string unsupported_reason(const Graph& graph, const Node& node) const {
    return supports(graph, node) ? std::string() : std::string("not supported");
  }
  virtual std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const = 0;
  // Whether compiling times kernels to choose among them (a plan built for such a backend stores the
  // choices, so that loading it does not time them again).
  virtual bool chooses_tactics() const { return false; }
  // Why this backend cannot run layers of `precision` here, or empty when it can. bf16 and int8 are
  // opt-in: a backend runs them only where it says so, so that none takes bf16 layers for fp32 ones or
  // runs an int8 layer on its dequantized values as if it were fp32.
  virtual std::string precision_refusal(Precision precision) const {
    if (precision == Precision::kBf16) return "it has no bf16 kernels";
    if (precision == Precision::kI8) return "it has no int8 kernels (build int8 for cpu or cpu-reference)";
    return {};
  }
  // The precision of a quantized plan's other layers where the build names none (--fp8-fallback): fp16
  // beside FP8, fp32 (the CPU's precision) beside int8, unless the backend runs quantized layers among
  // layers of one precision only.
  virtual Precision quantized_fallback(Precision quantized) const {
    return quantized == Precision::kI8 ? Precision::kF32 : Precision::kF16;
  }
  // The precision a build of `graph` that asked for none should use instead of the manifest's
  // `requested`, where this backend runs another one faster (pipeline/build_settings.h); empty to keep
  // `requested`.
  virtual std::optional<PrecisionAdvice> better_default(const Graph& /*graph*/,
                                                        Precision /*requested*/) const {
    return std::nullopt;
  }
  // What this backend runs on: its libraries' versions and its device. Never fails: a missing device is
  // itself a fact ("none: ...").
  virtual std::vector<BackendFact> environment() const { return {}; }
  // Every option of this backend, with `assignments` ("NAME=VALUE", applied in order) over the defaults:
  // what a plan built with them records. One line naming the option and the values it takes for a bad
  // one; a backend without options refuses any.
  virtual BackendOptions resolve_options(const std::vector<std::string>& assignments) const {
    require(assignments.empty(), "the ", name(), " backend takes no options, got '",
            assignments.empty() ? std::string() : assignments.front(), "'");
    return {};
  }
  // One line per option, "NAME=VALUES: what it chooses", the default value first (empty: none).
  virtual std::string options_help() const { return {}; }
  bool takes_options() const { return !options_help().empty(); }
  // The device this backend runs on, or null for a host backend. A backend with one runs on device
  // buffers (CompiledModel::run_device), preprocesses images there, and keeps activations in the device's
  // memory rather than the host's.
  virtual const Device* device() const { return nullptr; }
};

// The backends built into this binary, in order of preference ("cpu" first), and lookup by name.
std::vector<std::string_view> backend_names();
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace kiln
