// Refusing a batch whose activations cannot fit this machine's memory, before anything is allocated:
// an estimate of the peak of the activations alive at once, against what the process may still use.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace kiln::cli {

struct MemoryBudget {
  std::uint64_t bytes = 0;
  std::string source;  // what limits it, for the message: "available", "allowed by ulimit -v", ...
};

// The least of /proc/meminfo's MemAvailable (else sysconf's free pages), the address-space and data
// limits (ulimit -v, -d) and the cgroup's memory.max.
MemoryBudget host_memory_budget();

// The most activation bytes alive at once when `graph` runs in topological order on `batch` images
// (the leading dimension of every non-constant value is the batch). Constants are not counted.
std::uint64_t peak_activation_bytes(const Graph& graph, std::int64_t batch);

// Fails naming the batch, the estimate and the budget when the activations do not fit.
void refuse_batch_beyond_memory(const Graph& graph, std::int64_t batch, const MemoryBudget& budget);

// The same against host_memory_budget() for the backends whose activations live in host memory (every
// backend but cuda, whose engine reports its device's limits itself).
void refuse_batch_beyond_host_memory(const Graph& graph, std::int64_t batch, const std::string& backend);

// "1.5 GiB", for messages.
std::string gib_text(std::uint64_t bytes);

}  // namespace kiln::cli
