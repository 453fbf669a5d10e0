// What the library's CUDA tests share: whether a device is there, device buffers and streams that free
// themselves, the fixture folder (overridable, so that a test binary carried to a GPU machine finds the
// fixture made there) and the distance that tolerates atomics' summation order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

inline bool have_cuda_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// KILN_SDK_FIXTURE_DIR in the environment, else the build's fixture folder.
inline std::filesystem::path sdk_fixture_dir() {
  if (const char* dir = std::getenv("KILN_SDK_FIXTURE_DIR"); dir != nullptr && *dir != '\0') return dir;
  return KILN_SDK_FIXTURE_DIR;
}

inline void cuda_require(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw std::runtime_error(what + ": " + cudaGetErrorString(status));
}

// cudaMalloc'd floats.
class DeviceFloats {
 public:
  explicit DeviceFloats(std::size_t count) : count_(count) {
    cuda_require(cudaMalloc(&data_, bytes()), "cudaMalloc");
  }
  explicit DeviceFloats(const std::vector<float>& values) : DeviceFloats(values.size()) {
    cuda_require(cudaMemcpy(data_, values.data(), bytes(), cudaMemcpyHostToDevice), "uploading");
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  DeviceFloats(DeviceFloats&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
  }
  ~DeviceFloats() { cudaFree(data_); }

  void* data() const { return data_; }
  std::size_t bytes() const { return count_ * sizeof(float); }
  std::vector<float> download() const {
    std::vector<float> values(count_);
    cuda_require(cudaMemcpy(values.data(), data_, bytes(), cudaMemcpyDeviceToHost), "downloading");
    return values;
  }

 private:
  void* data_ = nullptr;
  std::size_t count_ = 0;
};

// A non-blocking stream, so that nothing orders it behind the legacy default stream.
class CudaStream {
 public:
  CudaStream() {
    cuda_require(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { cudaStreamDestroy(stream_); }
  cudaStream_t get() const { return stream_; }
  void synchronize() const { cuda_require(cudaStreamSynchronize(stream_), "synchronizing a stream"); }

 private:
  cudaStream_t stream_ = nullptr;
};
