#include "backends/cuda/tactics/tactic_cache.h"

#include <sstream>

#include "core/base64.h"
#include "core/error.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"

namespace kiln::cuda {

TacticCache::TacticCache(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.empty() || !std::filesystem::exists(path_)) return;
  std::istringstream in(read_regular_file(path_, kMaxCacheBytes, "a tactic cache"));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string key;
    int fused = 0;
    TacticRecord tactic;
    fields >> key >> fused >> tactic.algorithm >> tactic.workspace >> tactic.milliseconds;
    require(!fields.fail() && (fused == 0 || fused == 1), "tactic cache ", path_.string(), " line ", number,
            ": expected '<key> <fused 0|1> <algorithm> <workspace> <ms>'");
    tactic.fused = fused == 1;
    std::string compiled;
    if (fields >> compiled) {
      std::optional<std::string> plan = base64_decode(compiled);
      require(plan.has_value(), "tactic cache ", path_.string(), " line ", number,
              ": the compiled plan after the time is not base64");
      tactic.compiled = std::move(*plan);
    }
    entries_[key] = tactic;
  }
}

std::optional<TacticRecord> TacticCache::find(const std::string& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TacticCache::put(const std::string& key, const TacticRecord& tactic) {
  entries_[key] = tactic;
  dirty_ = true;
}

void TacticCache::save() const {
  if (path_.empty() || !dirty_) return;
  write_file_atomically(path_, [&](std::ostream& out) {
    out << "# kiln CUDA tactic cache: <key> <fused> <algorithm> <workspace bytes> <ms> [<compiled plan>]\n";
    for (const auto& [key, tactic] : entries_) {
      out << key << ' ' << (tactic.fused ? 1 : 0) << ' ' << tactic.algorithm << ' ' << tactic.workspace << ' '
          << tactic.milliseconds;
      if (!tactic.compiled.empty()) out << ' ' << base64_encode(tactic.compiled);
      out << '\n';
    }
  });
}

}  // namespace kiln::cuda
