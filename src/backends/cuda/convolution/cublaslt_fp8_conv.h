// An FP8 pointwise convolution on cuBLASLt: in NHWC a 1x1, stride-1, unpadded, ungrouped convolution is
// one GEMM, y[rows, K] = x[rows, C] · W[K, C]ᵀ with rows = N*H*W. cuBLASLt runs it on Hopper's FP8
// tensor cores with the whole epilogue fused:
//   y = act(sum(code products) * scale[k] + bias[k] (+ residual)),  act none or ReLU, y fp16,
// the same result kiln's cuDNN FP8 path computes (cudnn_graph_conv.h), in one launch and without its f32
// accumulator. x and W are E4M3 codes; scale[k] = input scale * weight scale[k] (f32) scales the rows of
// the column-major product (Fp8Scaling says how). The residual is C (fp16, beta = 1); the bias is fp16,
// the type cuBLASLt's FP8 kernels take with an fp16 C.
//
// D is always fp16: a layer whose readers take E4M3 codes runs the GEMM followed by kiln's quantize
// kernel. cuBLASLt's E4M3 D converts the f32 result times a reciprocal scale once, without kiln's
// rounding to fp16 first, and so gives codes other than kiln's quantizer's; no per-row alpha algorithm
// takes such a D, and the tensor-wide scale's codes were steps away from kiln's on small values.
//
// The layout is CublasLtLinear's (cublaslt_linear.h): one "TN" GEMM of column-major views, no copies.
// cuBLASLt's FP8 kernels need 16-byte aligned buffers and leading dimensions: C and K must be multiples
// of 16.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/convolution/cublaslt_linear.h"
#include "backends/cuda/convolution/cudnn_conv.h"
#include "backends/cuda/kernels/kernel_types.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

// The buffers one FP8 GEMM reads and writes (residual may be null).
struct Fp8GemmBuffers {
  const void* x = nullptr;         // [rows, C] E4M3 codes
  const void* weight = nullptr;    // [K, C] E4M3 codes
  const void* bias = nullptr;      // [K] fp16
  const void* residual = nullptr;  // [rows, K] fp16
  void* y = nullptr;               // [rows, K] fp16
};

// How cuBLASLt applies the per-channel scale: as A's outer-vector scale (CUBLASLT_MATMUL_MATRIX_SCALE_
// OUTER_VEC_32F, one factor per row of op(A); B takes the same mode with a vector of ones, one per row of
// x), as a per-row alpha (CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST), for where cuBLASLt
// offers no outer-vector algorithm, or, where every channel has the same scale (weights quantized with
// one scale per tensor), as A's tensor-wide scalar scale (the scale vector's first element), the FP8
// scaling every FP8 kernel takes.
enum class Fp8Scaling : std::uint8_t { kOuterVector, kAlphaVector, kScalar };

// The scale vectors, device f32 constants that outlive the layer.
struct Fp8GemmScales {
  const float* channel = nullptr;  // [K]: input scale * weight scale[k]
  const float* row = nullptr;      // [rows]: ones (kOuterVector only)
  bool uniform = false;            // every channel's scale is the same (kScalar needs it)
};

// What one FP8 GEMM computes besides the product.
struct Fp8GemmConfig {
  Act act = Act::kNone;
  bool residual = false;
  Fp8Scaling scaling = Fp8Scaling::kOuterVector;
};

// Takes part in pick_tactic() (tactic.h).
class CublasLtFp8Conv {
 public:
  using Tactic = MatmulTactic;

  // Whether the GEMM computes the layer: pointwise and dense (1x1 kernel, stride 1, no padding, one
  // group), C and K multiples of 16, activation none or ReLU.
  static bool takes(const ConvGeometry& geometry, Act act);

  CublasLtFp8Conv(cublasLtHandle_t handle, const ConvGeometry& geometry, const Fp8GemmConfig& config,
                  const Fp8GemmScales& scales);
  ~CublasLtFp8Conv();
  CublasLtFp8Conv(const CublasLtFp8Conv&) = delete;
  CublasLtFp8Conv& operator=(const CublasLtFp8Conv&) = delete;

  // cuBLASLt's version, the device, the shape, the activation, the residual and the scaling, as one
  // token.
  const std::string& key() const { return key_; }
  // Selects a stored tactic's algorithm from a fresh heuristic query; false if the heuristics no longer
  // offer it.
  bool restore(const TacticRecord& stored);
  // The usable heuristic results, best ranked first, that fit in `workspace_limit` bytes; none where a
  // buffer is not 256-byte aligned (the alignment the heuristics assume) or y is missing.
  void offer_candidates(TacticRace<Tactic>& race, const Fp8GemmBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen);
  static TacticRecord record(const Tactic& t) {
    return {t.fused, t.heuristic, t.workspace, t.milliseconds, {}};
  }
  // Enqueues the GEMM with the chosen tactic; `workspace` holds at least the tactic's workspace bytes.
  void enqueue(const Fp8GemmBuffers& buffers, void* workspace, cudaStream_t stream);

 private:
  // False where cuBLASLt refused a descriptor attribute or layout: the layer then offers nothing.
  bool describe(const ConvGeometry& geometry, Act act, const Fp8GemmScales& scales);
  bool describe_scaling(const Fp8GemmScales& scales);
  bool usable(const Fp8GemmBuffers& buffers) const;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristic_results();
  cublasStatus_t matmul(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes,
                        const Fp8GemmBuffers& buffers, void* workspace, cudaStream_t stream);

  cublasLtHandle_t handle_;
  Fp8GemmConfig config_;
  const float* channel_scale_;
  bool described_ = false;
  std::string key_;
  CublasLtMatmulDesc matmul_desc_;
  CublasLtLayout weight_layout_, x_layout_, c_layout_, d_layout_;
  CublasLtPreference preference_;
  Tactic tactic_;
  bool has_algo_ = false;
};

}  // namespace kiln::cuda
