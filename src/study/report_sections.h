// The sections of STUDY.md that describe the study rather than judge it: the demo note, warnings, the
// family's recipes and model, the method, the environment, the speed matrix, what was not tried and
// when to revisit. Family words come from the manifest's [study] keys (StudyFamilyText), so a family's
// report names only its own parts.
#pragma once

#include <string>

#include "study/study_runner.h"

namespace kiln {

std::string demo_note(const StudyResult& result);
// Warnings that make the study's comparisons unsound (NaN/Inf in the baseline), first in the report.
std::string warnings_block(const StudyResult& result);
// One bullet per recipe the variants use: what it selects in this family, and how many it did.
std::string recipe_list(const StudyResult& result);
std::string method_section(const StudyResult& result);
// The Method section's first words: "- Model: FAMILY: its parts. This run: `CHECKPOINT` (where it came
// from)", naming the manifest's own checkpoint only as such.
std::string model_line(const StudyResult& result, const std::string& parts);
std::string environment_section(const StudyResult& result);
std::string speed_matrix_section(const StudyResult& result);
std::string not_tried_section(const StudyResult& result);
std::string revisit_section(const StudyResult& result);

}  // namespace kiln
