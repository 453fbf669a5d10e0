// A context's image runs on a backend with a device (backends/device.h): each decoded image goes to the
// device once, its preprocessing runs there into its batch slot (equal to the host path bit for bit), the
// graph runs once reading the batch in place and only the outputs come back.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backends/device.h"
#include "core/tensor.h"
#include "io/image.h"
#include "io/timm_config.h"

namespace kiln::embed {

class SdkContext;

class DeviceImageRunner {
 public:
  DeviceImageRunner(const Device& device, const SdkContext& context);
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
