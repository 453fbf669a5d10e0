// Runs the registered passes over a graph, by level, minus those disabled by name.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "passes/pass.h"

namespace kiln {

struct PassOptions {
  int level = kMaxPassLevel;       // run passes of this level and below; 0 runs none
  std::set<std::string> disabled;  // pass names to skip; unknown names are an error
};

struct PassRun {
  std::string name;
  std::vector<std::string> changes;  // empty when the pass ran and found nothing
};

struct PassReport {
  std::vector<PassRun> runs;  // the passes that ran, in order
  std::size_t change_count() const;
  std::string str() const;  // "fold_batchnorm: 3 changes" followed by one indented line per change
};

// Checks the options (level in [0, kMaxPassLevel], every disabled name known) before touching the
// graph, verifies the graph, runs the selected passes in registry order, then compacts and verifies
// it again. With no pass selected the graph is left exactly as it was.
PassReport run_passes(Graph& graph, const PassOptions& options = {});

// One line per pass, "  name  (level N)  summary", for --help and `kiln build --list-passes`.
std::string list_passes();

}  // namespace kiln
