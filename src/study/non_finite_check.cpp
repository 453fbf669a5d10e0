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

std::vector<NonFiniteReference> non_finite_references(const StudyResult& result) {
  std::vector<NonFiniteReference> references;
  const std::set<std::string> names = {result.inputs.spec.baseline, "fp32"};
  for (const VariantResult& r : result.variants) {
    if (names.count(r.variant.name) == 0) continue;
    const EvalResult& eval = r.eval;
    if (eval.images_with_non_finite == 0 && stress_inputs_with_non_finite(eval) == 0) continue;
    const std::string role = r.variant.name == result.inputs.spec.baseline ? "the baseline" : "the reference";
    std::string summary =
        cat(r.variant.name, " (", role, ") gives NaN/Inf on ", non_finite_inputs_text(eval));
    if (!eval.non_finite_images.empty()) summary += cat(" (first: ", eval.non_finite_images.front(), ")");
    const bool on_images = eval.images_with_non_finite > 0;
    const std::string meaning =
        on_images ? ": every figure measured against it is meaningless, and no FP8 variant can be judged"
                  : ": its figures on the images stand, but it fails the finite check on stress inputs, so "
                    "no FP8 variant ships against it (each is still measured below)";
    references.push_back({summary,
                          summary + meaning +
                              "; `kiln eval` of its plan with `--reference` and `--per-layer` names the "
                              "first layer that goes non-finite",
                          on_images});
  }
  return references;
}

std::vector<std::string> non_finite_warnings(const std::vector<NonFiniteReference>& references) {
  std::vector<std::string> warnings;
  for (const NonFiniteReference& reference : references) warnings.push_back(reference.warning);
  return warnings;
}

std::string non_finite_verdict_reason(const NonFiniteReference& reference) {
  return reference.on_images ? "not judged: " + reference.warning
                             : reference.summary + ": it fails the finite check, so nothing ships against it";
}

}  // namespace kiln
