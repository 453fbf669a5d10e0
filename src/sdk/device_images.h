// A context's image runs on the cuda backend: each decoded image goes to the device once, its
// preprocessing runs there into its batch slot (backends/cuda/device_preprocess.h, equal to the host path
// bit for bit), the graph runs once reading the batch in place and only the outputs come back. Built only
// with the CUDA backend.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "io/image.h"
#include "io/timm_config.h"

namespace kiln::embed {

class SdkContext;

class DeviceImageRunner {
 public:
  explicit DeviceImageRunner(const SdkContext& context);
  ~DeviceImageRunner();
  DeviceImageRunner(const DeviceImageRunner&) = delete;
  DeviceImageRunner& operator=(const DeviceImageRunner&) = delete;

  // The graph's outputs for a batch whose slot i holds images[i] under timm's eval transform (the slots
  // past the images are zeros, as on the host path). The caller checked that they fit the batch.
  std::vector<Tensor> run_eval_transform(SdkContext& context, std::span<const Image> images,
                                         const PreprocessConfig& config);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::embed
