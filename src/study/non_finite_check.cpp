#include "study/non_finite_check.h"

#include <set>

#include "core/error.h"
#include "study/study_runner.h"

namespace kiln {

std::size_t stress_inputs_with_non_finite(const EvalResult& eval) {
  std::size_t inputs = 0;
  for (const StressResult& s : eval.stress) inputs += s.non_finite.total() > 0 ? 1 : 0;
  return inputs;
}

std::string non_finite_inputs_text(const EvalResult& eval) {
  return cat(eval.images_with_non_finite, " of ", eval.images_evaluated, " images, ",
             stress_inputs_with_non_finite(eval), " of ", eval.stress.size(), " stress inputs");
}

std::vector<std::string> reference_non_finite_warnings(const StudyResult& result) {
  std::vector<std::string> warnings;
  const std::set<std::string> references = {result.inputs.spec.baseline, "fp32"};
  for (const VariantResult& r : result.variants) {
    if (references.count(r.variant.name) == 0) continue;
    const EvalResult& eval = r.eval;
    if (eval.images_with_non_finite == 0 && stress_inputs_with_non_finite(eval) == 0) continue;
    const std::string role = r.variant.name == result.inputs.spec.baseline ? "the baseline" : "the reference";
    std::string text = cat(r.variant.name, " (", role, ") gives NaN/Inf on ", non_finite_inputs_text(eval));
    if (!eval.non_finite_images.empty()) text += cat(" (first: ", eval.non_finite_images.front(), ")");
    warnings.push_back(text +
                       ": every figure measured against it is meaningless, and no FP8 variant can be judged; "
                       "`kiln eval` of its plan with `--reference` and `--per-layer` names the first layer "
                       "that goes non-finite");
  }
  return warnings;
}

}  // namespace kiln
