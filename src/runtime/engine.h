// An engine: a plan compiled on one backend for one batch size, ready to run many times.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "backends/backend.h"

namespace kiln {

// The backend `kiln run` and `kiln bench` use when none is named: the fastest CPU backend built in. It
// is also the fallback that runs the layers another backend does not support.
std::string default_backend();

class Engine {
 public:
  // Widens the plan's weights to f32 for execution and compiles its graph on `backend`, with the
  // per-layer choices the plan stored when it was built for that backend. Layers the backend does not
  // support run on default_backend() (see runtime/partitioned_model.h), unless
  // options.strict_backend refuses them.
  Engine(std::shared_ptr<const Plan> plan, const std::string& backend, const CompileOptions& options);
  // The same on backend objects: `fallback` runs what `backend` does not support.
  Engine(std::shared_ptr<const Plan> plan, const Backend& backend, const Backend& fallback,
         const CompileOptions& options);

  const Plan& plan() const { return *plan_; }
  const std::string& backend() const { return backend_; }
  const std::string& fallback_backend() const { return fallback_; }
  // The layers that run on the fallback backend instead (empty when the backend runs them all).
  const std::vector<std::string>& fallback_layers() const { return fallback_layers_; }
  std::int64_t batch() const { return options_.batch; }
  // One [batch, 3, H, W] f32 tensor in; the graph's outputs back.
  std::vector<Tensor> run(const Tensor& input);
  // Device buffers in and out on the caller's stream, without waiting (see CompiledModel::run_device);
  // refused when layers run on the CPU fallback.
  void run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, void* stream);
  std::vector<LayerTime> last_profile() const { return compiled_->last_profile(); }
  // Device-timed replays of the whole network (see CompiledModel); empty on host backends and when
  // layers run on the fallback.
  std::optional<double> time_device_replays(int iterations) {
    return compiled_->time_device_replays(iterations);
  }
  std::string describe() const { return compiled_->describe(); }
  std::map<std::string, nlohmann::json> layer_data() const { return compiled_->layer_data(); }

 private:
  std::shared_ptr<const Plan> plan_;
  std::string backend_;
  std::string fallback_;
  CompileOptions options_;
  std::vector<std::string> fallback_layers_;
  std::unique_ptr<CompiledModel> compiled_;
};

// The one-line warning that `layers` run on the fallback backend instead of `backend`, naming the first
// few (empty when there are none), e.g. "kiln: warning: 3 layers run on cpu, not cuda: a, b, c (use
// --strict-backend to refuse)".
std::string fallback_warning(const std::vector<std::string>& layers, std::string_view backend,
                             std::string_view fallback);
std::string fallback_warning(const Engine& engine);

}  // namespace kiln
