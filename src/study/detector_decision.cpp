#include "study/detector_decision.h"

#include <algorithm>

#include "core/error.h"
#include "study/non_finite_check.h"
#include "study/report_format.h"
#include "study/study_runner.h"

namespace kiln {
namespace {

std::string points(double fraction) { return fixed(100.0 * fraction, 2); }

// One mAP drop against its threshold, said in `reasons`.
CriterionVerdict judge_map_drop(const std::string& criterion, const std::string& what, const Interval& drop,
                                double max_drop, std::vector<std::string>& reasons) {
  CriterionVerdict verdict{criterion, max_drop, judge_drop(drop, max_drop), std::nullopt};
  std::string text = cat(what, " drops by ", points(drop.estimate), " points (95% CI ", points(drop.low),
                         " .. ", points(drop.high), "): ");
  reasons.push_back(text + drop_verdict_text(verdict.verdict, max_drop));
  return verdict;
}

void judge_map_drops(const DetectorStudySpec& spec, const DetectorQuality& quality,
                     DetectorVerdict& verdict) {
  if (!quality.drop) {
    verdict.criteria.push_back({"map50_95_drop_vs_baseline", spec.max_map_drop, DropVerdict::kUndecided, {}});
    verdict.criteria.push_back({"map50_drop_vs_baseline", spec.max_map50_drop, DropVerdict::kUndecided, {}});
    verdict.reasons.push_back("mAP: no paired figures against the baseline " + spec.study.baseline);
    return;
  }
  const std::string vs =
      cat(" (vs ", spec.study.baseline, ", paired bootstrap of ", quality.drop->resamples, " resamples)");
  verdict.criteria.push_back(judge_map_drop("map50_95_drop_vs_baseline", "mAP@0.5:0.95" + vs,
                                            quality.drop->map50_95, spec.max_map_drop, verdict.reasons));
  verdict.criteria.push_back(judge_map_drop("map50_drop_vs_baseline", "mAP@0.5" + vs, quality.drop->map50,
                                            spec.max_map50_drop, verdict.reasons));
}

}  // namespace

bool has_non_finite(const VariantResult& r) {
  return r.eval.images_with_non_finite > 0 || stress_inputs_with_non_finite(r.eval) > 0;
}

DetectorVerdict judge_detector_variant(const DetectorStudySpec& spec, const VariantResult& timing,
                                       const DetectorQuality& quality, bool timings_sound) {
  DetectorVerdict verdict;
  verdict.variant = timing.variant.name;
  if (timings_sound) {
    verdict.speed_passes = judge_speed(spec.study, timing, verdict.reasons);
    verdict.speed_low_end_under = timing.speedup.low < spec.study.min_speedup;
  } else {
    verdict.reasons.push_back(
        "speed not judged: the timings were taken on a loaded machine (see the warnings)");
  }
  verdict.non_finite = has_non_finite(timing);
  if (verdict.non_finite) verdict.reasons.push_back("NaN/Inf on " + non_finite_inputs_text(timing.eval));
  verdict.parity_passes = quality.parity.passes();
  verdict.reasons.push_back("box parity with fp32: " + parity_text(quality.parity) +
                            (verdict.parity_passes ? "" : " (" + parity_failures(quality.parity) + ")"));
  judge_map_drops(spec, quality, verdict);
  const auto any = [&](DropVerdict v) {
    return std::any_of(verdict.criteria.begin(), verdict.criteria.end(),
                       [&](const CriterionVerdict& c) { return c.verdict == v; });
  };
  const bool too_slow = timings_sound && !verdict.speed_passes;
  if (too_slow || verdict.non_finite || !verdict.parity_passes || any(DropVerdict::kBeyond)) {
    verdict.outcome = ShipOutcome::kDoNotShip;
  } else if (!timings_sound || any(DropVerdict::kUndecided)) {
    verdict.outcome = ShipOutcome::kCannotTell;
  } else {
    verdict.outcome = ShipOutcome::kShip;
  }
  return verdict;
}

DetectorDecision decide_detector(const DetectorStudySpec& spec, const std::vector<VariantResult>& variants,
                                 const std::vector<DetectorQuality>& quality, bool timings_sound) {
  require(variants.size() == quality.size(), "detector decision: ", variants.size(), " variants but ",
          quality.size(), " quality figures");
  DetectorDecision decision;
  decision.speed_judged = timings_sound;
  double best_speedup = 0.0;
  bool any_open = false;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantResult& r = variants[i];
    if (r.variant.name == spec.study.baseline)
      decision.held_out_images = static_cast<std::int64_t>(quality[i].parity.images);
    if (!is_quantized(r.variant.precision)) continue;
    DetectorVerdict verdict = judge_detector_variant(spec, r, quality[i], timings_sound);
    if (verdict.outcome == ShipOutcome::kShip && r.speedup.median > best_speedup) {
      best_speedup = r.speedup.median;
      decision.variant = r.variant.name;
    }
    any_open = any_open || verdict.outcome == ShipOutcome::kCannotTell;
    std::string line = cat(verdict.variant, ": ", ship_outcome_name(verdict.outcome));
    for (std::size_t k = 0; k < verdict.reasons.size(); ++k) line += (k ? "; " : ": ") + verdict.reasons[k];
    decision.reasons.push_back(line);
    decision.verdicts.push_back(std::move(verdict));
  }
  decision.outcome = !decision.variant.empty() ? ShipOutcome::kShip
                     : any_open                ? ShipOutcome::kCannotTell
                                               : ShipOutcome::kDoNotShip;
  return decision;
}

nlohmann::json to_json(const DetectorDecision& decision) {
  nlohmann::json variants = nlohmann::json::array();
  for (const DetectorVerdict& v : decision.verdicts) {
    nlohmann::json criteria = nlohmann::json::array();
    for (const CriterionVerdict& c : v.criteria) {
      criteria.push_back({{"criterion", c.criterion},
                          {"max_drop", c.max_drop},
                          {"verdict", std::string(drop_verdict_name(c.verdict))}});
    }
    variants.push_back({{"name", v.variant},
                        {"outcome", std::string(ship_outcome_name(v.outcome))},
                        {"speedup_median_reaches_min", v.speed_passes},
                        {"speedup_low_end_under_min", v.speed_low_end_under},
                        {"speed_judged", decision.speed_judged},
                        {"non_finite", v.non_finite},
                        {"parity_passes", v.parity_passes},
                        {"criteria", criteria},
                        {"reasons", v.reasons}});
  }
  return {{"outcome", std::string(ship_outcome_name(decision.outcome))},
          {"ship_fp8", decision.outcome == ShipOutcome::kShip},
          {"variant", decision.variant},
          {"held_out_images", decision.held_out_images},
          {"reasons", decision.reasons},
          {"variants", variants}};
}

}  // namespace kiln
