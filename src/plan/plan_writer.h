// Saving a plan (the file is defined in plan_format.h).
//
// The output depends only on the plan: no timestamps, sorted header keys, and a canonical value and
// layer order, so the same plan always gives the same bytes. Dead layers and values nothing reads are
// left out, as Graph::compact() would; the graph need not be compacted first.
#pragma once

#include <filesystem>
#include <ostream>
#include <string_view>

#include "plan/plan.h"

namespace kiln {

// Writes to a temporary file beside `path` and renames it over `path`, so a failed write leaves any
// existing plan as it was. Fails (kiln::Error naming the file) when the graph does not verify, two
// live layers share a name, layer data names a layer that is not in the graph, or a value cannot be
// stored (a non-finite float attribute, a string that is not UTF-8).
void write_plan(const std::filesystem::path& path, const Plan& plan);

// The same bytes to a stream; `name` stands for the destination in error messages.
void write_plan(std::ostream& out, const Plan& plan, std::string_view name);

}  // namespace kiln
