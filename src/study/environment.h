// Where a study ran: enough to tell whether two studies are comparable (machine, software, kiln build).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace kiln {

struct Environment {
  std::string date_utc;      // ISO 8601, when the study started
  std::string host_cpu;      // /proc/cpuinfo's model name
  std::string cpu_isa;       // the vector extensions the CPU has: "AVX2, AVX-512, AVX512-FP16; no AMX"
  int cpu_threads = 0;       // hardware threads the process may use
  std::string os;            // uname: system, release, machine
  std::string compiler;      // that built kiln
  std::string kiln_version;  // KILN_VERSION
  std::string kiln_commit;   // git commit the build was configured at ("unknown" outside a checkout)
  std::string load_average;  // /proc/loadavg's first three fields: a busy machine times slower
  // Every built-in backend's facts (libraries, device), and for each of kRequiredBackendFacts one row
  // even where that backend is not built in.
  std::vector<BackendFact> backend_facts;
  // The studied backend's options as its plans record them (PlanInfo::backend_options; empty for a
  // backend without options), set once the plans are built.
  BackendOptions backend_options;
  // Other work held more than every hardware thread when the study started: host timings are inflated.
  bool overloaded() const;
  nlohmann::json to_json() const;
};

// The facts every study reports, whichever backends this kiln has: key and label.
const std::vector<std::pair<std::string, std::string>>& required_backend_facts();

Environment capture_environment();

// The CPU's extensions from /proc/cpuinfo's "flags" line (exposed for tests).
std::string cpu_isa_from_flags(const std::string& flags);

}  // namespace kiln
