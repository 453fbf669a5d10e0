// The element and activation types of kiln's own CUDA kernels: everything the CUDA backend runs besides
// cuDNN's convolutions, declared one operator family per header (layout_kernels.h, elementwise_kernels.h,
// pooling_kernels.h, split_attention_kernels.h, quantization_kernels.h, data_movement_kernels.h,
// attention_kernels.h, detection_kernels.h, detect_select_kernels.h; squeeze_mlp_kernels.h). Tensors are NHWC
// (channels innermost; a rank-3 [N, C, L] is stored [N, L, C]), stored as f32 or fp16; fp16 kernels
// accumulate in f32. Every launcher is asynchronous on `stream` and returns the launch error (cudaSuccess
// when the launch was accepted).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

enum class Elem : std::uint8_t { kF32, kF16 };
inline std::size_t elem_bytes(Elem e) { return e == Elem::kF32 ? 4 : 2; }

// Activations kernels apply after an add, a bias or on their own (kiln::Activation's values).
enum class Act : std::uint8_t { kNone, kRelu, kSilu, kSigmoid };

// The grid of the codes a kernel writes for 8-bit readers: FP8 E4M3, or int8's
// code = saturate(round_to_nearest_even(y * (1 / scale))) of core/dtype.h.
enum class CodeGrid : std::uint8_t { kE4m3, kInt8 };

// Where a kernel also writes the codes of its output, as an FP8 or int8 layer reads it (a quantize point
// fused into its producer, quantize_fusion.h): codes[i] = E4M3(y[i] rounded to the storage type / scale),
// or on int8's grid int8(y[i] rounded so x RN(1 / scale)), exactly the quantize kernels' codes
// (quantization_kernels.h). Null codes: none. Kernels taking one skip their own output where y is null.
struct CodesOut {
  std::uint8_t* codes = nullptr;
  float scale = 1.0f;
  CodeGrid grid = CodeGrid::kE4m3;
};

// E4M3 codes a kernel reads, with their per-tensor scale: the value is half(code x scale), as the reference
// reads a quantize point's output in an fp16 plan.
struct E4m3In {
  const std::uint8_t* codes = nullptr;
  float scale = 1.0f;
};

}  // namespace kiln::cuda
