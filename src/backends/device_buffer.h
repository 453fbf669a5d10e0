// Owners of a Device's memory and streams (backends/device.h), for the code above the backends that
// runs a graph on device buffers.
#pragma once

#include <utility>

#include "backends/device.h"

namespace kiln {

// Device memory, released on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer(const Device& device, std::size_t bytes)
      : device_(&device), data_(bytes > 0 ? device.allocate(bytes) : nullptr), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : device_(other.device_),
        data_(std::exchange(other.data_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) device_->release(data_);
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  const Device* device_;
  void* data_;
  std::size_t bytes_;
};

// A stream of its own, destroyed on destruction.
class DeviceStream {
 public:
  explicit DeviceStream(const Device& device) : device_(device), stream_(device.create_stream()) {}
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  ~DeviceStream() { device_.destroy_stream(stream_); }
  void* get() const { return stream_; }

 private:
  const Device& device_;
  void* stream_;
};

}  // namespace kiln
