// Where a study ran: enough to tell whether two studies are comparable (machine, software, kiln build).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

struct Environment {
  std::string date_utc;      // ISO 8601, when the study started
  std::string host_cpu;      // /proc/cpuinfo's model name
  int cpu_threads = 0;       // hardware threads the process may use
  std::string os;            // uname: system, release, machine
  std::string compiler;      // that built kiln
  std::string kiln_version;  // KILN_VERSION
  std::string kiln_commit;   // git commit the build was configured at ("unknown" outside a checkout)
  std::string load_average;  // /proc/loadavg's first three fields: a busy machine times slower
  nlohmann::json to_json() const;
};

Environment capture_environment();

}  // namespace kiln
