// Timing a plan in a `kiln bench` process of its own. On the cuda backend an engine's graph replays run
// measurably slower once a second network has been compiled in the same process, and stay slower after it
// is gone (a library handle, a stream or a CUDA graph alone does not do it,
// benchmarks/engine_state_probe.cpp). A study holds an engine per variant and
// the fp32 reference, so timed in its own process it would not time a plan as `kiln bench` does; each of
// its device timings runs `kiln bench` on the plan file instead, the same code over the same region.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "runtime/benchmark.h"

namespace kiln {

// A folder of its own under the system's temporary folder, removed with everything in it when destroyed.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct ChildTiming {
  std::filesystem::path program;  // a kiln executable
  // The timing inputs, the JSON reports and the children's logs.
  std::shared_ptr<const ScratchFolder> scratch;
  std::string backend;
  bool strict_backend = false;
  std::string tactic_cache;  // for a batch the plan holds no tactics for (empty: none)
};

struct ChildTimes {
  LatencyStats latency;                    // the device timing, as `kiln bench` reports it
  std::optional<LatencyStats> end_to_end;  // whole runs on the host clock, where asked for
};

// `kiln bench plan_file --input input_npy --batch batch ...` with `settings` (and --end-to-end where
// `end_to_end`: one process times both), its JSON report read back. Fails naming the plan and the child's
// last line of output if it fails.
ChildTimes time_in_child(const ChildTiming& child, const std::filesystem::path& plan_file, std::int64_t batch,
                         const std::filesystem::path& input_npy, const BenchSettings& settings,
                         bool end_to_end);

}  // namespace kiln
