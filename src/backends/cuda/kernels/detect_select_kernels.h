// The CUDA kernel of YOLOv10's NMS-free selection (kDetectSelect; see kernel_types.h): the same
// detections in the same order as the reference's select_detections (backends/cpu/reference/
// detect_select.h), for f32 and for fp16 storage.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// The most detections per image the kernel sorts in shared memory.
inline constexpr int kDetectSelectMaxDet = 2048;

// x [n, anchors, 4 + classes] (centre x, y, width, height, class scores per anchor) -> y [n, 6, max_det]
// (rank 3 [n, max_det, 6] channels last: x1, y1, x2, y2, score, label of each detection). With fewer
// anchors than max_det (the graph's shape rules exclude it) stage 1 keeps them all, as the reference
// does; rows past anchors x classes detections are zero.
struct DetectSelectShape {
  int n, anchors, classes, max_det;
};
// The scratch the launcher needs: one ranking key per anchor.
std::size_t detect_select_workspace_bytes(const DetectSelectShape& shape);
cudaError_t detect_select(const void* x, void* y, void* workspace, Elem e, const DetectSelectShape& shape,
                          cudaStream_t stream);

}  // namespace kiln::cuda
