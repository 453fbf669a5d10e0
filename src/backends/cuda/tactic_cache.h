// Timed convolution tactics, kept in a text file so that rebuilding an engine on the same machine
// picks the same algorithms without timing them again. One line per convolution shape:
//   <key> <fused 0|1> <algorithm> <workspace bytes> <milliseconds>
// The key names the cuDNN version, the device, the precision, the shapes, the attributes and the
// epilogue, so an entry never applies to anything else.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kiln::cuda {

struct ConvTactic {
  bool fused = true;  // cudnnConvolutionBiasActivationForward (else: convolution + kiln's epilogue kernel)
  int algorithm = 0;  // cudnnConvolutionFwdAlgo_t
  std::size_t workspace = 0;
  double milliseconds = 0;  // as timed (0 when chosen by heuristics)
};

class TacticCache {
 public:
  // An empty path keeps tactics in memory only.
  explicit TacticCache(std::filesystem::path path);
  std::optional<ConvTactic> find(const std::string& key) const;
  void put(const std::string& key, const ConvTactic& tactic);
  // Writes the file (atomically) when entries were added.
  void save() const;

 private:
  std::filesystem::path path_;
  std::map<std::string, ConvTactic> entries_;
  bool dirty_ = false;
};

}  // namespace kiln::cuda
