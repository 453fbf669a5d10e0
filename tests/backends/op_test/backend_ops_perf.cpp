// Times the operator test's cases: per case and backend, the median wall time of N runs of the
// compiled graph (after one untimed run). Usage: backend_ops_perf [--runs N] [--filter TEXT]
// (TEXT: cases whose name contains it). Cases a backend cannot run here are listed as skipped.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>

#include "core/error.h"
#include "op_case.h"
#include "backends/backend.h"

namespace kiln::testing {
namespace {

struct PerfOptions {
  int runs = 20;
  std::string filter;
};

PerfOptions parse(int argc, char** argv) {
  PerfOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--runs" || arg == "--filter") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--filter")
        options.filter = value;
      else
        options.runs = std::max(1, std::atoi(value.c_str()));
    } else {
      fail("usage: backend_ops_perf [--runs N] [--filter TEXT]; got '", arg, "'");
    }
  }
  return options;
}

double median_ms(CompiledModel& model, const std::vector<Tensor>& inputs, int runs) {
  model.run(inputs);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model.run(inputs);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int perf_main(int argc, char** argv) {
  const PerfOptions options = parse(argc, argv);
  std::cout << std::left << std::setw(52) << "case" << std::setw(15) << "backend"
            << "median ms (" << options.runs << " runs)\n";
  for (const OpCase& c : op_cases()) {
    if (c.name.find(options.filter) == std::string::npos) continue;
    const CaseGraph graph = c.make();
    for (const std::string& backend : op_test_backends()) {
      std::cout << std::setw(52) << c.name << std::setw(15) << backend;
      const std::string skip = skip_reason(backend, graph);
      if (!skip.empty()) {
        std::cout << "skipped: " << skip << "\n";
        continue;
      }
      CompileOptions compile;
      compile.batch = graph.inputs.front().dim(0);
      compile.opt_level = 1;
      const auto model = make_backend(backend)->compile(graph.graph, compile);
      std::cout << std::fixed << std::setprecision(4) << median_ms(*model, graph.inputs, options.runs)
                << "\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  try {
    return kiln::testing::perf_main(argc, argv);
  } catch (const kiln::Error& error) {
    std::cerr << "backend_ops_perf: " << error.what() << "\n";
    return 1;
  }
}
