// The header sections that describe the build and the bundle: "build", "bundle" and
// "quantization" (see plan_format.h). Per-layer backend data lives in the layer table instead.
#pragma once

#include <nlohmann/json.hpp>

#include "plan/json_field.h"
#include "plan/plan.h"

namespace kiln {

// Adds the sections to `header`. Fails on values JSON cannot hold (a NaN mean, a non-object
// quantization section).
void write_plan_info(const PlanInfo& info, const ModelConfig& config, nlohmann::json& header);
// Reads them back; leaves info.format_version and info.layer_data alone.
void read_plan_info(const JsonField& header, PlanInfo& info, ModelConfig& config);

}  // namespace kiln
