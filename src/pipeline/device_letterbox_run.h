// A detector's batch on a backend with a device (backends/device.h) with its letterbox made there: the
// decoded images go up once, the device letterboxes each into its batch slot (equal to the host's
// letterbox_tensor bit for bit), the graph reads them in place and only its outputs come back.
#pragma once

#include <memory>
#include <vector>

#include "backends/device.h"
#include "families/registry.h"
#include "io/image.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

class DeviceLetterboxRun {
 public:
  DeviceLetterboxRun(const Device& device, const Engine& engine);
  ~DeviceLetterboxRun();
  DeviceLetterboxRun(const DeviceLetterboxRun&) = delete;
  DeviceLetterboxRun& operator=(const DeviceLetterboxRun&) = delete;

  // The graph's outputs for `images` letterboxed as `boxes` place them (one per batch slot) with `fill`.
  std::vector<Tensor> run(Engine& engine, const std::vector<Image>& images,
                          const std::vector<Letterbox>& boxes, std::uint8_t fill);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::pipeline
