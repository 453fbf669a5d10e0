// The CUDA kernel of YOLOv10's detection decode (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

// x [n, h * w, 4 * reg_max + classes] (per pixel the bins of the left, top, right and bottom distances,
// then the class logits) -> y [n, h * w, 4 + classes]: the box's centre x, y, width and height in input
// pixels (each distance the mean of the softmax over its bins, in cells of `stride` pixels from the
// cell's centre), then the sigmoid of each class logit.
struct DetectShape {
  int n, h, w, reg_max, classes, stride;
};
cudaError_t detect_decode(const void* x, void* y, Elem e, const DetectShape& shape, cudaStream_t stream);

}  // namespace kiln::cuda
