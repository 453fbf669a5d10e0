// The cuda backend's device (backends/device.h): the CUDA runtime's memory and streams, and the image
// preprocessing of device_preprocess.h, behind the interface the code above the backends uses.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/device_preprocess.h"
#include "backends/device.h"

namespace kiln {

namespace {

cudaStream_t stream_of(void* stream) { return static_cast<cudaStream_t>(stream); }

class CudaImages final : public DeviceImages {
 public:
  void eval_transform(const Image& image, const PreprocessConfig& config, float* out, void* stream) override {
    preprocessor_.eval_transform(image, config, out, stream_of(stream));
  }
  void letterbox(const Image& image, const LetterboxPlacement& placement, float* out, void* stream) override {
    preprocessor_.letterbox(image, placement, out, stream_of(stream));
  }

 private:
  cuda::DevicePreprocessor preprocessor_;
};

class CudaDevice final : public Device {
 public:
  std::string_view kind() const override { return "CUDA"; }
  int count() const override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: none to use
      return 0;
    }
    return count;
  }
  bool select(int ordinal) const override { return cudaSetDevice(ordinal) == cudaSuccess; }
  bool holds(const void* pointer) const override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
      cudaGetLastError();  // a pointer CUDA does not know is host memory
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice;
  }
  void* allocate(std::size_t bytes) const override {
    void* memory = nullptr;
    cuda::check(cudaMalloc(&memory, std::max<std::size_t>(bytes, 1)), "allocating device memory");
    return memory;
  }
  void release(void* memory) const noexcept override { cudaFree(memory); }  // waits for work using it
  void* create_stream() const override {
    cudaStream_t stream = nullptr;
    cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
    return stream;
  }
  void destroy_stream(void* stream) const noexcept override {
    if (stream != nullptr) cudaStreamDestroy(stream_of(stream));
  }
  void copy_to_host(void* host, const void* device, std::size_t bytes, void* stream,
                    std::string_view what) const override {
    cuda::check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_of(stream)), what);
  }
  void clear(void* device, std::size_t bytes, void* stream, std::string_view what) const override {
    cuda::check(cudaMemsetAsync(device, 0, bytes, stream_of(stream)), what);
  }
  void synchronize(void* stream, std::string_view what) const override {
    cuda::check(cudaStreamSynchronize(stream_of(stream)), what);
  }
  bool wait_for(void* stream, void* producer) const override;
  std::unique_ptr<DeviceImages> make_images() const override { return std::make_unique<CudaImages>(); }
};

bool CudaDevice::wait_for(void* stream, void* producer) const {
  const cudaStream_t ours = stream_of(stream);
  const cudaStream_t theirs = stream_of(producer);
  // The array interface names the legacy default stream 1 (cudaStreamLegacy); kiln takes it as null.
  if (theirs == ours || (theirs == cudaStreamLegacy && ours == nullptr)) return true;
  cudaEvent_t ready = nullptr;
  cuda::check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "creating a CUDA event");
  const bool ordered =
      cudaEventRecord(ready, theirs) == cudaSuccess && cudaStreamWaitEvent(ours, ready, 0) == cudaSuccess;
  cudaEventDestroy(ready);
  return ordered;
}

}  // namespace

const Device* CudaBackend::device() const {
  static const CudaDevice device;
  return &device;
}

}  // namespace kiln
