#include "passes/pass_manager.h"

#include <algorithm>

#include "core/error.h"
#include "graph/verifier.h"

namespace kiln {

namespace {

std::string known_pass_names() {
  std::string names;
  for (const Pass& pass : registered_passes()) names += cat(names.empty() ? "" : ", ", pass.name);
  return names;
}

void check_options(const PassOptions& options) {
  require(options.level >= 0 && options.level <= kMaxPassLevel, "pass level must be between 0 and ",
          kMaxPassLevel, ", got ", options.level);
  for (const std::string& name : options.disabled) {
    const auto passes = registered_passes();
    const bool known =
        std::any_of(passes.begin(), passes.end(), [&](const Pass& pass) { return pass.name == name; });
    require(known, "unknown pass '", name, "' (known passes: ", known_pass_names(), ")");
  }
}

}  // namespace

std::size_t PassReport::change_count() const {
  std::size_t total = 0;
  for (const PassRun& run : runs) total += run.changes.size();
  return total;
}

std::string PassReport::str() const {
  std::string text;
  for (const PassRun& run : runs) {
    text += cat(run.name, ": ", run.changes.size(), run.changes.size() == 1 ? " change\n" : " changes\n");
    for (const std::string& change : run.changes) text += cat("  ", change, "\n");
  }
  return text;
}

PassReport run_passes(Graph& graph, const PassOptions& options) {
  check_options(options);
  verify(graph);  // the passes rely on the verifier's invariants (weights constant, shapes inferred)
  PassReport report;
  for (const Pass& pass : registered_passes()) {
    if (pass.level > options.level || options.disabled.contains(std::string(pass.name))) continue;
    report.runs.push_back(PassRun{std::string(pass.name), pass.run(graph)});
  }
  if (report.runs.empty()) return report;
  graph.compact();
  verify(graph);
  return report;
}

std::string list_passes() {
  std::size_t width = 0;
  for (const Pass& pass : registered_passes()) width = std::max(width, pass.name.size());
  std::string text;
  for (const Pass& pass : registered_passes()) {
    text += cat("  ", pass.name, std::string(width - pass.name.size() + 2, ' '), "(level ", pass.level, ")  ",
                pass.summary, "\n");
  }
  return text;
}

}  // namespace kiln
