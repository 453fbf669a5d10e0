// A context's image runs on the cuda backend: the decoded image goes to the device once, its
// preprocessing runs there (backends/cuda/device_preprocess.h, equal to the host path bit for bit), the
// graph reads the result in place and only the outputs come back. Built only with the CUDA backend.
#pragma once

#include <memory>
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

  // The graph's outputs for a batch whose first image is `image` under timm's eval transform (the other
  // batch slots are zeros, as on the host path).
  std::vector<Tensor> run_eval_transform(SdkContext& context, const Image& image,
                                         const PreprocessConfig& config);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::embed
