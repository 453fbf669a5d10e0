// The builder's former name, still used by fallback_step.cpp; new code includes program_builder.h.
#pragma once

#include "backends/cpu/onednn/program_builder.h"

namespace kiln::onednn {

using PlanBuilder = ProgramBuilder;

}  // namespace kiln::onednn
