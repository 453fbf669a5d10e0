// An engine: a plan compiled on one backend for one batch size, ready to run many times.
#pragma once

#include <memory>
#include <string>

#include "plan/plan.h"
#include "runtime/backend.h"

namespace kiln {

// The backend `kiln run` and `kiln bench` use when none is named: the fastest CPU backend built in.
std::string default_backend();

class Engine {
 public:
  // Widens the plan's weights to f32 for execution and compiles its graph on `backend`, with the
  // per-layer choices the plan stored when it was built for that backend.
  Engine(std::shared_ptr<const Plan> plan, const std::string& backend, const CompileOptions& options);

  const Plan& plan() const { return *plan_; }
  const std::string& backend() const { return backend_; }
  std::int64_t batch() const { return options_.batch; }
  // One [batch, 3, H, W] f32 tensor in; the graph's outputs back.
  std::vector<Tensor> run(const Tensor& input);
  std::vector<LayerTime> last_profile() const { return compiled_->last_profile(); }
  // Device-timed replays of the whole network (see CompiledModel); empty on host backends.
  std::optional<double> time_device_replays(int iterations) {
    return compiled_->time_device_replays(iterations);
  }
  std::string describe() const { return compiled_->describe(); }
  std::map<std::string, nlohmann::json> layer_data() const { return compiled_->layer_data(); }

 private:
  std::shared_ptr<const Plan> plan_;
  std::string backend_;
  CompileOptions options_;
  std::unique_ptr<CompiledModel> compiled_;
};

}  // namespace kiln
