// A linear layer on cuBLASLt: y[rows, out] = act(x[rows, in] · Wᵀ + bias), with x, W (PyTorch's
// [out, in] layout), bias and y all f32 or all fp16. A linear layer is one GEMM: cuBLASLt runs it on its
// GEMM kernels with the bias (and a ReLU) fused into their epilogue, rather than as a 1x1 convolution
// through cuDNN. Other activations run in kiln's add_bias_act kernel after the matmul. Both precisions
// accumulate in f32 (CUBLAS_COMPUTE_32F, never a TF32 compute type), so f32 layers keep f32 accuracy.
//
// In cuBLASLt's column-major terms the row-major product is D = op(A) · B with A = W seen as [in x out]
// (transposed), B = x seen as [in x rows] and D = y seen as [out x rows]: one "TN" GEMM, no copies.
//
// Every buffer, the bias included, must be 256-byte aligned (kiln's arena and cudaMalloc'd constants
// are): the heuristics rank algorithms under cuBLASLt's default alignment assumption, 256 bytes.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/kernels/kernel_types.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

// The buffers one linear layer reads and writes.
struct LinearBuffers {
  const void* x = nullptr;       // [rows, in]
  const void* weight = nullptr;  // [out, in]
  const void* bias = nullptr;    // [out]
  void* y = nullptr;             // [rows, out]
};

// Owners of cuBLASLt's descriptors (the FP8 GEMM, cublaslt_fp8_conv.h, shares them).
struct CublasLtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* d) const { cublasLtMatrixLayoutDestroy(d); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { cublasLtMatmulPreferenceDestroy(d); }
};
using CublasLtMatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, CublasLtDeleter>;
using CublasLtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, CublasLtDeleter>;
using CublasLtPreference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, CublasLtDeleter>;

// The preference every cuBLASLt layer's heuristics query with: cuBLAS's recommended workspace on Hopper.
// A constant rather than the search's limit because the heuristics' list depends on it and the cache keeps
// an index into that list: the same key must give the same list. Layers skip results needing more than
// the search allows.
CublasLtPreference heuristic_preference();
// Heuristic results requested, ranked best first; a search times every usable one.
inline constexpr int kMatmulCandidates = 8;

// A tactic of cuBLASLt: `heuristic` indexes the heuristics' ranked results for the layer's key (the same
// list for the same key); fused: the epilogue applies the activation (none or ReLU).
struct MatmulTactic {
  bool fused = true;
  int heuristic = 0;
  std::size_t workspace = 0;
  double milliseconds = 0;
  cublasLtMatmulAlgo_t algo{};  // the ranked result's algorithm
};

// The heuristics' ranked algorithms for a matmul with layouts a, b, c and d, the same list for the same
// descriptors (indices are what the cache keeps); entries whose state is not success stay in place,
// unusable. The heuristics read the bias pointer only for its alignment: it is set to a null stand-in
// (aligned to anything) first, which keeps the list independent of the buffers.
std::vector<cublasLtMatmulHeuristicResult_t> ranked_algorithms(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t preference);
// The stored tactic re-created from a fresh ranked list; nothing where the list changed (its index out of
// range or unusable, or a different workspace size).
std::optional<MatmulTactic> stored_matmul_tactic(const std::vector<cublasLtMatmulHeuristicResult_t>& results,
                                                 const TacticRecord& stored);

// Takes part in pick_tactic() (tactic.h).
class CublasLtLinear {
 public:
  using Tactic = MatmulTactic;

  CublasLtLinear(cublasLtHandle_t handle, Elem elem, int rows, int in, int out, Act act);
  ~CublasLtLinear();
  CublasLtLinear(const CublasLtLinear&) = delete;
  CublasLtLinear& operator=(const CublasLtLinear&) = delete;

  // Identifies the layer for the tactic cache: cuBLASLt's version, the device, the precision, the shape
  // and the activation, as one whitespace-free token.
  const std::string& key() const { return key_; }
  // Selects a stored tactic's algorithm from a fresh heuristic query; false if the heuristics no longer
  // offer it (out of range, unusable, or a different workspace size: the list changed).
  bool restore(const TacticRecord& stored);
  // The usable heuristic results, best ranked first, that fit in `workspace_limit` bytes.
  void offer_candidates(TacticRace<Tactic>& race, const LinearBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen);
  static TacticRecord record(const Tactic& t) {
    return {t.fused, t.heuristic, t.workspace, t.milliseconds, {}};
  }
  // Enqueues the layer with the chosen tactic; `workspace` holds at least the tactic's workspace bytes. The
  // buffers may differ from call to call (the bias pointer is set on every call).
  void enqueue(const LinearBuffers& buffers, void* workspace, cudaStream_t stream);

 private:
  using MatmulDesc = CublasLtMatmulDesc;
  using Layout = CublasLtLayout;
  using Preference = CublasLtPreference;

  // The heuristics' ranked algorithms, the same list for the same key (indices are what the cache keeps);
  // entries whose state is not success stay in place, unusable.
  std::vector<cublasLtMatmulHeuristicResult_t> heuristic_results();
  // The matmul with its epilogue, and the activation kernel when the epilogue cannot apply it.
  cublasStatus_t matmul(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes,
                        const LinearBuffers& buffers, void* workspace, cudaStream_t stream);
  cudaError_t activation(const LinearBuffers& buffers, cudaStream_t stream) const;
  // Both, for trying an algorithm: false if either fails.
  bool launch(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes, const LinearBuffers& buffers,
              void* workspace, cudaStream_t stream);

  cublasLtHandle_t handle_;
  Elem elem_;
  int rows_, out_;  // the extents the activation kernel needs
  Act act_;
  bool fused_;  // the epilogue applies the activation (none or ReLU)
  std::string key_;
  MatmulDesc matmul_desc_;
  Layout weight_layout_, x_layout_, y_layout_;
  Preference preference_;
  Tactic tactic_;
  bool has_algo_ = false;
};

}  // namespace kiln::cuda
