// Error checks and owning handles for the CUDA backend. Every CUDA, cuDNN and cuBLASLt call is checked; a
// failure becomes a kiln::Error naming what was being done.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace kiln::cuda {

inline void check(cudaError_t status, std::string_view what) {
  if (status != cudaSuccess) fail("cuda backend: ", what, ": ", cudaGetErrorString(status));
}
inline void check(cudnnStatus_t status, std::string_view what) {
  if (status != CUDNN_STATUS_SUCCESS) fail("cuda backend: ", what, ": ", cudnnGetErrorString(status));
}
inline void check(cublasStatus_t status, std::string_view what) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("cuda backend: ", what, ": ", cublasLtGetStatusName(status));
}

// The current device's name, e.g. "NVIDIA H200" (tactics record where they were timed).
inline std::string current_device_name() {
  int device = 0;
  check(cudaGetDevice(&device), "querying the current device");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "querying the device's properties");
  return properties.name;
}

// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check(cudaMalloc(&data_, bytes), "allocating device memory");
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (copies from it run asynchronously at full speed), freed on destruction.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check(cudaMallocHost(&data_, bytes), "allocating pinned host memory");
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A CUDA event pair for timing a region of a stream.
class EventPair {
 public:
  EventPair() {
    check(cudaEventCreate(&start_), "creating an event");
    check(cudaEventCreate(&stop_), "creating an event");
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start(cudaStream_t stream) { check(cudaEventRecord(start_, stream), "recording an event"); }
  void stop(cudaStream_t stream) { check(cudaEventRecord(stop_, stream), "recording an event"); }
  // Waits for the stop event; milliseconds between the two.
  float milliseconds() {
    check(cudaEventSynchronize(stop_), "waiting for an event");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "reading an event time");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace kiln::cuda
