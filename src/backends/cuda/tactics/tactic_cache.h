// Timed tactics (cuDNN convolutions, cuBLASLt matmuls), kept in a text file so that rebuilding an engine on
// the same machine picks the same algorithms without timing them again. One line per layer shape:
//   <key> <fused 0|1> <algorithm> <workspace bytes> <milliseconds> [<compiled plan, base64>]
// The key (tactic_key(), convolution/tactic_key.h) names the library and its version, the device, the
// precision, the shapes, the attributes and the epilogue, so an entry never applies to anything else.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kiln::cuda {

// A tactic as the cache file and a plan store it, whichever library it is for; each library reads it into
// its own tactic type (cudnn_conv.h, cudnn_graph_conv.h, cublaslt_linear.h), which says what `algorithm`
// counts.
struct TacticRecord {
  bool fused = true;  // the library applies the epilogue (else: kiln's epilogue kernel after it)
  int algorithm = 0;  // the library's algorithm number or its index in the library's ranked candidates
  std::size_t workspace = 0;
  double milliseconds = 0;  // as timed (0 when chosen by heuristics)
  // A runtime-compiled engine's execution plan as cuDNN serializes it, so that restoring the tactic
  // compiles nothing; empty for the libraries' precompiled kernels.
  std::string compiled;
};

class TacticCache {
 public:
  // An empty path keeps tactics in memory only.
  explicit TacticCache(std::filesystem::path path);
  std::optional<TacticRecord> find(const std::string& key) const;
  void put(const std::string& key, const TacticRecord& tactic);
  // Writes the file (atomically) when entries were added.
  void save() const;

 private:
  std::filesystem::path path_;
  std::map<std::string, TacticRecord> entries_;
  bool dirty_ = false;
};

}  // namespace kiln::cuda
