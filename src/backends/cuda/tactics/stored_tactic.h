// A layer's tactic as a plan stores it (CompiledModel::layer_data, one entry per layer):
//   {"tactic": {"api", "key", "device", "fused", "algorithm", "workspace", "us"}}
// api names the library (kApi*), key the layer as the tactic cache knows it, device the GPU it was chosen
// on. Host code only, so plans can be read and checked without a GPU.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "backends/cuda/tactics/tactic_cache.h"

namespace kiln::cuda {

// The libraries a layer's tactic runs on (the plan stores the name).
inline constexpr const char* kApiGraph = "cudnn-graph";    // cuDNN's graph (backend) API
inline constexpr const char* kApiLegacy = "cudnn-legacy";  // cudnnConvolution(BiasActivation)Forward
inline constexpr const char* kApiDense =
    "cudnn-graph-dense";                                 // a grouped convolution run dense, block-diagonal
inline constexpr const char* kApiCublasLt = "cublaslt";  // a linear layer as one cuBLASLt matmul
inline constexpr const char* kApiCublasLtFp8 = "cublaslt-fp8";  // an FP8 pointwise convolution as one GEMM
inline constexpr const char* kApiKilnDepthwise = "kiln-depthwise";  // kiln's depthwise kernel
inline constexpr const char* kApiKilnNarrow = "kiln-narrow";        // kiln's kernel for RGB stems
inline constexpr const char* kApiKilnMma = "kiln-mma";        // kiln's tensor-core kernel for few channels
inline constexpr const char* kApiKilnHopper = "kiln-hopper";  // kiln's Hopper pointwise kernel (wgmma, TMA)

struct StoredTactic {
  std::string api;  // which library runs it
  std::string key;  // the cache key of the layer it was chosen for
  TacticRecord tactic;
};

// The tactic an earlier compile chose for `layer`, when it was chosen on a GPU named `device`; nothing
// when the layer has none or it comes from another GPU. A malformed entry is an error naming the layer.
std::optional<StoredTactic> stored_tactic(const std::map<std::string, nlohmann::json>& layer_data,
                                          const std::string& layer, const std::string& device);

// The layer_data entry recording `chosen`, as stored_tactic() reads it.
nlohmann::json tactic_entry(const StoredTactic& chosen, const std::string& device);

}  // namespace kiln::cuda
