// The CUDA kernel of YOLOv10's detection decode (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// x [n, h * w, 4 * reg_max + classes] (per pixel the bins of the left, top, right and bottom distances,
// then the class logits) -> y [n, h * w, 4 + classes]: the box's centre x, y, width and height in input
// pixels (each distance the mean of the softmax over its bins, in cells of `stride` pixels from the
// cell's centre), then the sigmoid of each class logit.
struct DetectShape {
  int n, h, w, reg_max, classes, stride;
};
// Where the decode reads a pixel's bins and logits: `box` and `classes` point at pixel 0's, and each
// pixel's are `box_pitch` and `class_pitch` elements after the previous one's. One tensor holding both is
// box = x, classes = x + 4 * reg_max, both pitches 4 * reg_max + classes; two tensors (a concat read
// apart, fusion.h) are read where they lie.
struct DecodeSources {
  const void* box = nullptr;
  const void* classes = nullptr;
  int box_pitch = 0, class_pitch = 0;
};
DecodeSources packed_decode_sources(const void* x, const DetectShape& shape, Elem e);
cudaError_t detect_decode(const DecodeSources& x, void* y, Elem e, const DetectShape& shape,
                          cudaStream_t stream);

}  // namespace kiln::cuda
