#include "study/decision_headline.h"

#include <cctype>

#include "core/error.h"

namespace kiln {
namespace {

// The warnings that made the study unsound (result.warnings), as the headline's reason.
std::string unsound_headline(const std::vector<std::string>& warnings) {
  std::string first = warnings.front();
  first[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(first[0])));
  return cat("**Do not ship FP8: a variant the others are measured against gives NaN/Inf.** ", first,
             warnings.size() > 1 ? cat(" (", warnings.size() - 1, " more warning(s) above)") : std::string(),
             ".");
}

// "FP8", "int8" or "bf16": what the shipped variant runs in (FP8 where the variant is not among the
// results, as in a decision read back without them).
std::string shipped_precision(const StudyResult& result) {
  const VariantResult* shipped = find_variant(result, result.decision.variant);
  if (shipped == nullptr || shipped->variant.precision == Precision::kF8) return "FP8";
  return std::string(precision_name(shipped->variant.precision));
}

}  // namespace

std::string decision_headline(const StudyResult& result) {
  const StudyDecision& decision = result.decision;
  if (!result.warnings.empty()) return unsound_headline(result.warnings);
  if (!decision.speed_judged && decision.outcome != ShipOutcome::kDoNotShip) {
    return "**Cannot tell: the timings were taken on a loaded machine** (see the warnings above), so no "
           "speed-up is judged; re-run the study on an idle machine.";
  }
  switch (decision.outcome) {
    case ShipOutcome::kShip:
      return cat("**Ship ", shipped_precision(result), ": ", decision.variant, ".** It meets every threshold below at 95% confidence.");
    case ShipOutcome::kCannotTell:
      return cat("**Cannot tell with ", decision.held_out_images,
                 " held-out images** whether an FP8 variant meets the thresholds: no variant is shown to "
                 "meet them all, and at least one threshold lies inside an accuracy drop's 95% interval",
                 decision.images_needed ? cat("; about ", *decision.images_needed,
                                              " images would settle every undecided variant, if the "
                                              "observed rates held")
                                        : std::string(),
                 ".");
    case ShipOutcome::kDoNotShip:
      break;
  }
  if (decision.verdicts.empty()) return "**Do not ship FP8.** The study has no FP8 variant.";
  return "**Do not ship FP8.** Every FP8 variant misses a threshold: too slow, NaN/Inf, or an accuracy "
         "drop whose 95% interval lies above its threshold.";
}

}  // namespace kiln
