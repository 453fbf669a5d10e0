// How every convolution or linear layer (on cuDNN's legacy and graph APIs, cuBLASLt, or kiln's own
// kernels: convolution/) gets its tactic: the one the plan stores when it still applies, else the tactic
// cache's when it still applies, else one chosen now: the library's first working heuristic choice, or,
// when searching, the fastest of its candidates timed as CUDA graph replays (timing.h).
//
// A layer object taking part provides:
//   using Tactic = ...;                          its library's tactic type
//   const std::string& key() const;              the tactic cache's key
//   bool restore(const TacticRecord& stored);    re-creates a stored tactic; false if it no longer applies
//   void offer_candidates(TacticRace<Tactic>&, const Buffers&, void* workspace, std::size_t limit);
//   void use(const Tactic& chosen);              makes the race's winner the layer's tactic
//   static TacticRecord record(const Tactic&);   the tactic as the cache and the plan store it
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <optional>

#include "backends/cuda/tactics/tactic_cache.h"

namespace kiln::cuda {

using Launch = std::function<bool(cudaStream_t)>;  // enqueues a candidate; false when the library refused

// Where the tactics of one build came from (describe() reports them).
struct TacticCounts {
  std::size_t from_plan = 0;
  std::size_t stale = 0;  // stored in the plan for another GPU, library or shape
  std::size_t from_cache = 0;
  std::size_t searched = 0;  // chosen now (timed or by heuristics)
};

// Runs a candidate once (search false: it counts when it ran and the stream synchronized) or times it
// (search true). Milliseconds per launch (0 without search), or nothing when it failed.
std::optional<double> try_candidate(bool search, cudaStream_t stream, const Launch& launch);

// The candidates of one layer, offered one at a time: without search the first that runs wins, with
// search the fastest (the first of equally fast ones).
template <class Tactic>
class TacticRace {
 public:
  TacticRace(bool search, cudaStream_t stream) : search_(search), stream_(stream) {}
  // False once the race is decided and no more candidates need offering.
  bool offer(Tactic tactic, const Launch& launch) {
    const std::optional<double> ms = try_candidate(search_, stream_, launch);
    if (!ms) return true;
    tactic.milliseconds = *ms;
    if (!winner_ || tactic.milliseconds < winner_->milliseconds) winner_ = tactic;
    return search_;
  }
  const std::optional<Tactic>& winner() const { return winner_; }

 private:
  bool search_;
  cudaStream_t stream_;
  std::optional<Tactic> winner_;
};

// What choosing a tactic now may use.
struct TacticSearch {
  bool timed = false;     // time the candidates (else the library's heuristic choice)
  bool remember = false;  // keep a chosen tactic in the cache
  void* workspace = nullptr;
  std::size_t workspace_limit = 0;  // candidates needing more are skipped
  cudaStream_t stream = nullptr;
};

// The layer's tactic (see the top of this file), set on the layer; nothing when `stored` no longer
// applies or no candidate runs. Counts cache hits and searches.
template <class Layer, class Buffers>
std::optional<TacticRecord> pick_tactic(Layer& layer, const std::optional<TacticRecord>& stored,
                                        TacticCache& cache, const TacticSearch& search,
                                        const Buffers& buffers, TacticCounts& counts) {
  if (stored) return layer.restore(*stored) ? stored : std::nullopt;
  if (const auto cached = cache.find(layer.key()); cached && layer.restore(*cached)) {
    ++counts.from_cache;
    return cached;
  }
  ++counts.searched;
  TacticRace<typename Layer::Tactic> race(search.timed, search.stream);
  layer.offer_candidates(race, buffers, search.workspace, search.workspace_limit);
  if (!race.winner()) return std::nullopt;
  layer.use(*race.winner());
  const TacticRecord chosen = layer.record(*race.winner());
  if (search.remember) cache.put(layer.key(), chosen);
  return chosen;
}

}  // namespace kiln::cuda
