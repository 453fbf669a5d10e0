// Preprocessing on the GPU: a decoded 8-bit RGB image goes up once and the network's f32 NCHW input is
// made on the device, so a run on the cuda backend is not bound by the host's resize. The kernels follow
// io/resample_tables.h, so the input equals the CPU path's (preprocess_image; the yolov10 family's
// letterbox_tensor) bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/cuda_util.h"
#include "backends/device.h"
#include "io/image.h"
#include "io/timm_config.h"

namespace kiln::cuda {

// The placement the interface names (backends/device.h), which the family computes.
using LetterboxPlacement = kiln::LetterboxPlacement;

// Holds the device buffers between calls (they grow to the largest image seen). Work is queued on the
// caller's stream and the host's image may be freed on return; calls on one object use one stream, or
// the caller synchronizes between them.
class DevicePreprocessor {
 public:
  // timm's eval transform (resize the shorter side, center crop, normalize) into `out`, [3, size, size]
  // f32 in device memory.
  void eval_transform(const Image& image, const PreprocessConfig& config, float* out, cudaStream_t stream);
  // YOLO's letterbox (OpenCV's INTER_LINEAR, then RGB / 255) into `out`, [3, size, size] f32 in device
  // memory.
  void letterbox(const Image& image, const LetterboxPlacement& placement, float* out, cudaStream_t stream);

 private:
  const std::uint8_t* upload_image(const Image& image, cudaStream_t stream);
  const std::int32_t* upload_tables(const std::vector<std::int32_t>& tables, cudaStream_t stream);

  DeviceBuffer image_;
  DeviceBuffer rows_;
  DeviceBuffer tables_;
};

}  // namespace kiln::cuda
