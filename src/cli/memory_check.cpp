#include "cli/memory_check.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

#include "backends/backend.h"
#include "core/error.h"

namespace kiln::cli {

namespace {

std::uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                               : std::numeric_limits<std::uint64_t>::max();
}

void take_limit(MemoryBudget& budget, int resource, const char* source) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (limit.rlim_cur < budget.bytes) budget = {static_cast<std::uint64_t>(limit.rlim_cur), source};
}

void take_cgroup_limit(MemoryBudget& budget) {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::uint64_t bytes = 0;
  if (in >> bytes && bytes < budget.bytes) budget = {bytes, "allowed by the cgroup's memory.max"};
}

std::uint64_t value_bytes(const Value& value, std::int64_t batch) {
  std::uint64_t elements = static_cast<std::uint64_t>(batch);
  for (std::size_t d = 1; d < value.shape.size(); ++d)
    elements *= static_cast<std::uint64_t>(std::max<std::int64_t>(value.shape[d], 1));
  return elements * dtype_size(value.dtype);
}

}  // namespace

MemoryBudget host_memory_budget() {
  MemoryBudget budget{meminfo_available(), "available"};
  take_limit(budget, RLIMIT_AS, "allowed by ulimit -v");
  take_limit(budget, RLIMIT_DATA, "allowed by ulimit -d");
  take_cgroup_limit(budget);
  return budget;
}

std::uint64_t peak_activation_bytes(const Graph& graph, std::int64_t batch) {
  const std::vector<NodeId> order = graph.topological_order();
  // The step after which each value is no longer read (graph outputs live to the end).
  std::vector<std::size_t> last_read(graph.values().size(), 0);
  for (std::size_t step = 0; step < order.size(); ++step) {
    for (const ValueId input : graph.node(order[step]).inputs)
      last_read[static_cast<std::size_t>(input)] = step;
  }
  for (const ValueId output : graph.outputs()) last_read[static_cast<std::size_t>(output)] = order.size();
  std::vector<std::vector<ValueId>> freed_after(order.size() + 1);
  std::uint64_t live = 0;
  for (const ValueId input : graph.inputs()) {
    live += value_bytes(graph.value(input), batch);
    freed_after[last_read[static_cast<std::size_t>(input)]].push_back(input);
  }
  std::uint64_t peak = live;
  for (std::size_t step = 0; step < order.size(); ++step) {
    const ValueId output = graph.node(order[step]).output;
    live += value_bytes(graph.value(output), batch);
    freed_after[std::max(step, last_read[static_cast<std::size_t>(output)])].push_back(output);
    peak = std::max(peak, live);
    for (const ValueId done : freed_after[step]) live -= value_bytes(graph.value(done), batch);
  }
  return peak;
}

std::string gib_text(std::uint64_t bytes) {
  std::ostringstream out;
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  out << std::fixed << std::setprecision(gib < 10.0 ? 1 : 0) << gib << " GiB";
  return out.str();
}

void refuse_batch_beyond_memory(const Graph& graph, std::int64_t batch, const MemoryBudget& budget) {
  const std::uint64_t needed = peak_activation_bytes(graph, batch);
  require(needed <= budget.bytes, "batch ", batch, " needs ~", gib_text(needed),
          " of activations; this machine has ", gib_text(budget.bytes), " ", budget.source,
          ": use a smaller --batch");
}

void refuse_batch_beyond_host_memory(const Graph& graph, std::int64_t batch, const std::string& backend) {
  // A backend with a device keeps activations in the device's memory, not the host's; one this kiln lacks
  // is refused by the step that needs it.
  const std::vector<std::string_view> built_in = backend_names();
  if (std::find(built_in.begin(), built_in.end(), backend) == built_in.end()) return;
  if (make_backend(backend)->device() != nullptr) return;
  refuse_batch_beyond_memory(graph, batch, host_memory_budget());
}

}  // namespace kiln::cli
