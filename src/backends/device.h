// What a backend that runs on a device (the cuda backend's GPU) offers the code above it: device memory,
// streams and preprocessing on the device. Plain virtual calls on opaque handles (a stream is a void*,
// memory a void*), so that a backend loaded from a shared library can provide them without the code
// above it knowing the device's API. Host backends have none (Backend::device() is null).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "io/image.h"
#include "io/timm_config.h"

namespace kiln {

// Where YOLO's letterbox puts the scaled image in its size x size square (the family computes it).
struct LetterboxPlacement {
  std::int64_t size = 0;
  std::int64_t scaled_width = 0, scaled_height = 0;
  std::int64_t left = 0, top = 0;
  std::uint8_t fill = 0;
};

// Preprocessing on the device, equal to the host's bit for bit: each call uploads the image and queues
// the work on `stream`, writing an f32 [3, size, size] tensor to the device memory at `out`. The host's
// image may be freed on return; calls on one object use one stream, or the caller synchronizes between.
class DeviceImages {
 public:
  virtual ~DeviceImages() = default;
  // timm's eval transform (resize the shorter side, center crop, normalize).
  virtual void eval_transform(const Image& image, const PreprocessConfig& config, float* out,
                              void* stream) = 0;
  // YOLO's letterbox (OpenCV's INTER_LINEAR, then RGB / 255).
  virtual void letterbox(const Image& image, const LetterboxPlacement& placement, float* out,
                         void* stream) = 0;
};

// A backend's device. It lives as long as the program (a loaded backend stays loaded), so memory it
// handed out may outlive the Backend object that named it. Failures throw kiln::Error naming `what`.
class Device {
 public:
  virtual ~Device() = default;
  // The kind of device, for messages ("CUDA").
  virtual std::string_view kind() const = 0;
  // How many devices of this kind the machine has (0 when none can be used).
  virtual int count() const = 0;
  // Makes device `ordinal` the calling thread's current one; false when it cannot.
  virtual bool select(int ordinal) const = 0;
  // Whether `pointer` is device memory (memory the device does not know is host memory).
  virtual bool holds(const void* pointer) const = 0;
  virtual void* allocate(std::size_t bytes) const = 0;
  virtual void release(void* memory) const noexcept = 0;  // after the work using it has finished
  virtual void* create_stream() const = 0;
  virtual void destroy_stream(void* stream) const noexcept = 0;
  // Queued on `stream`: `bytes` of device memory to the host, or zeros into device memory.
  virtual void copy_to_host(void* host, const void* device, std::size_t bytes, void* stream,
                            std::string_view what) const = 0;
  virtual void clear(void* device, std::size_t bytes, void* stream, std::string_view what) const = 0;
  virtual void synchronize(void* stream, std::string_view what) const = 0;
  // Makes `stream` wait for the work queued so far on `producer`, a stream handle as interop protocols
  // pass it (CUDA's array interface: 1 is the legacy default stream); false when it cannot.
  virtual bool wait_for(void* stream, void* producer) const = 0;
  virtual std::unique_ptr<DeviceImages> make_images() const = 0;
};

}  // namespace kiln
