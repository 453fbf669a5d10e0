#include "backends/cuda/program/program.h"

#include <cstring>
#include <map>

#include "backends/cuda/cuda_options.h"
#include "backends/cuda/kernels/launch_context.h"
#include "backends/cuda/program/program_builder.h"
#include "backends/cuda/tactics/timing.h"

namespace kiln::cuda {

LibraryHandles::LibraryHandles() {
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  check(cudnnCreate(&cudnn), "creating the cuDNN handle");
  check(cudnnSetStream(cudnn, stream), "binding cuDNN to the stream");
  check(cublasLtCreate(&cublaslt), "creating the cuBLASLt handle");
}

LibraryHandles::~LibraryHandles() {
  if (cublaslt != nullptr) cublasLtDestroy(cublaslt);
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

CudaProgram::CudaProgram(const Graph& graph, const CompileOptions& options)
    : options_(options), launch_{cuda_options_from(options.backend_options).early_launch} {
  require(options.batch >= 1, "cuda backend: batch must be at least 1, got ", options.batch);
  // Timing tactics, the eager run and the capture all launch the program's kernels.
  const LaunchScope scope(launch_);
  program_ = ProgramBuilder(graph, options_, handles_, current_device_name()).build();
  for (const Node& node : graph.nodes()) {
    node_names_.push_back(node.name);
    node_ops_.push_back(node.op);
  }
  // One eager run loads every kernel before the graph is captured.
  enqueue_all();
  check(cudaStreamSynchronize(handles_.stream), "running the network once");
  if (!options_.profile) capture();
}

CudaProgram::~CudaProgram() {
  if (device_run_done_ != nullptr) cudaEventDestroy(device_run_done_);
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

void CudaProgram::enqueue_all() {
  for (const Step& step : program_->steps) step.launch(handles_.stream);
}

void CudaProgram::capture() {
  const cudaStream_t stream = handles_.stream;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "starting graph capture");
  try {
    for (const Step& step : program_->steps) {
      step.launch(stream);
      if (step.io) io_.record(*step.io, stream);
    }
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken != nullptr) cudaGraphDestroy(broken);
    throw;
  }
  check(cudaStreamEndCapture(stream, &graph_), "ending graph capture");
  check(cudaGraphInstantiate(&exec_, graph_, 0), "instantiating the CUDA graph");
  check(cudaGraphUpload(exec_, stream), "uploading the CUDA graph");
  check(cudaStreamSynchronize(stream), "uploading the CUDA graph");
  check(cudaEventCreateWithFlags(&device_run_done_, cudaEventDisableTiming), "creating an event");
}

void CudaProgram::copy_inputs(const std::vector<Tensor>& inputs) {
  std::vector<InputStage>& stages = program_->inputs;
  require(inputs.size() == stages.size(), "cuda backend: expected ", stages.size(), " input tensor",
          stages.size() == 1 ? "" : "s", ", got ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    require(input.dtype() == DType::kF32, "graph inputs must be f32, got ", dtype_name(input.dtype()));
    require(input.shape() == stages[i].shape, "this model was compiled for input shape ",
            shape_str(stages[i].shape), ", got ", shape_str(input.shape()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    InputStage& stage = stages[i];
    std::memcpy(stage.host.data(), inputs[i].bytes(), inputs[i].nbytes());
    check(cudaMemcpyAsync(stage.device.data(), stage.host.data(), inputs[i].nbytes(), cudaMemcpyHostToDevice,
                          handles_.stream),
          "copying the input");
  }
}

// Kernel time per layer: each step captured alone in a CUDA graph and its replays timed with events
// (timing.h), on this run's data, so launch gaps and host overhead are not counted.
void CudaProgram::profile_steps() {
  enqueue_all();
  check(cudaStreamSynchronize(handles_.stream), "running the network");
  profile_.clear();
  // One entry per layer and reported operation, in the order the steps first run.
  std::map<std::pair<NodeId, OpKind>, std::size_t> entry;
  for (const Step& step : program_->steps) {
    if (step.node == kNoNode) continue;
    const auto ms = time_launch(handles_.stream, [&](cudaStream_t s) {
      step.launch(s);
      return true;
    });
    require(ms.has_value(), "cuda backend: could not time step '", step.label, "'");
    const OpKind op = step.reported_op.value_or(node_ops_[static_cast<std::size_t>(step.node)]);
    const auto [at, added] = entry.try_emplace({step.node, op}, profile_.size());
    if (added) profile_.push_back({node_names_[static_cast<std::size_t>(step.node)], op, 0.0});
    profile_[at->second].milliseconds += *ms;
  }
}

std::vector<Tensor> CudaProgram::read_outputs() {
  check(cudaMemcpyAsync(program_->output_host.data(), program_->output_device.data(),
                        program_->output_device.bytes(), cudaMemcpyDeviceToHost, handles_.stream),
        "copying the outputs");
  check(cudaStreamSynchronize(handles_.stream), "running the network");
  std::vector<Tensor> outputs;
  const auto* host = static_cast<const std::byte*>(program_->output_host.data());
  for (const Shape& s : program_->output_shapes) {
    Tensor t(DType::kF32, s);
    std::memcpy(t.mutable_bytes(), host, t.nbytes());
    host += t.nbytes();
    outputs.push_back(std::move(t));
  }
  return outputs;
}

std::vector<Tensor> CudaProgram::run(const std::vector<Tensor>& inputs) {
  copy_inputs(inputs);
  if (options_.profile) {
    const LaunchScope scope(launch_);
    profile_steps();
  } else {
    io_.point_at_own(exec_);
    check(cudaGraphLaunch(exec_, handles_.stream), "launching the CUDA graph");
  }
  return read_outputs();
}

namespace {

void require_device_memory(const void* pointer, const std::string& what) {
  cudaPointerAttributes attributes{};
  const bool known = cudaPointerGetAttributes(&attributes, pointer) == cudaSuccess;
  if (!known) cudaGetLastError();  // a pointer CUDA does not know leaves an error to clear
  require(known && (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged),
          what, ": not CUDA device memory");
}

}  // namespace

void CudaProgram::run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                             void* stream) {
  require(exec_ != nullptr, "cuda backend: a profiling engine runs on host buffers only");
  require(inputs.size() == program_->inputs.size() && outputs.size() == program_->output_shapes.size(),
          "cuda backend: expected ", program_->inputs.size(), " input and ", program_->output_shapes.size(),
          " output buffers, got ", inputs.size(), " and ", outputs.size());
  const auto caller = static_cast<cudaStream_t>(stream);
  for (std::size_t i = 0; i < inputs.size(); ++i) require_device_memory(inputs[i], cat("input ", i));
  for (std::size_t i = 0; i < outputs.size(); ++i) require_device_memory(outputs[i], cat("output ", i));
  io_.point_at(exec_, inputs, outputs);
  check(cudaGraphLaunch(exec_, caller), "launching the CUDA graph on the caller's stream");
  // A later host run() on this program's own stream waits for this work (it shares the arena).
  check(cudaEventRecord(device_run_done_, caller), "recording an event on the caller's stream");
  check(cudaStreamWaitEvent(handles_.stream, device_run_done_, 0),
        "ordering the program's stream after the caller's");
}

std::optional<double> CudaProgram::time_device_replays(int iterations) {
  require(iterations >= 1, "replays must be >= 1");
  require(exec_ != nullptr, "cuda backend: a profiling engine has no CUDA graph to time");
  io_.point_at_own(exec_);  // the caller's buffers of a device run may be gone
  EventPair events;
  events.start(handles_.stream);
  for (int i = 0; i < iterations; ++i)
    check(cudaGraphLaunch(exec_, handles_.stream), "launching the CUDA graph");
  events.stop(handles_.stream);
  return static_cast<double>(events.milliseconds()) / iterations;
}

std::string CudaProgram::describe() const {
  std::string text;
  for (const Step& step : program_->steps) {
    text += cat(step.node == kNoNode ? "-" : node_names_[static_cast<std::size_t>(step.node)], ": ",
                step.label, "\n");
  }
  const TacticCounts& t = program_->tactics;
  return text +
         cat("precision ", program_->elem == Elem::kF16 ? "fp16" : "f32", ", activation arena ",
             program_->arena.bytes(), " bytes, cuDNN workspace ", program_->workspace.bytes(), " bytes, ",
             program_->steps.size(), " steps in ",
             options_.profile ? "eager mode (profiling)" : "one CUDA graph", ", tactics: ", t.from_plan,
             " from the plan",
             t.stale > 0 ? cat(" (", t.stale, " stored for another GPU, library or shape)") : std::string(),
             ", ", t.from_cache, " from the cache, ", t.searched,
             options_.opt_level == 0 ? " heuristic" : " timed", "\n");
}

}  // namespace kiln::cuda
