#include "study/study_decision.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "study/study_runner.h"

namespace kiln {
namespace {

std::string two_digits(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << value;
  return text.str();
}

std::string points(double fraction) { return two_digits(100.0 * fraction); }

std::string scientific(double value) {
  std::ostringstream text;
  text << std::scientific << std::setprecision(2) << value;
  return text.str();
}

// "0.40 points (95% CI -0.12 .. 0.93)"
std::string drop_text(const Interval& drop) {
  return cat(points(drop.estimate), " points (95% CI ", points(drop.low), " .. ", points(drop.high), ")");
}

// Image i of the variant and of the baseline must be the same image for the pairs to mean anything.
void require_same_images(const EvalResult& variant, const EvalResult& baseline) {
  require(variant.per_image.size() == baseline.per_image.size(), "paired statistics: the variant has ",
          variant.per_image.size(), " evaluated images, the baseline ", baseline.per_image.size());
  for (std::size_t i = 0; i < variant.per_image.size(); ++i) {
    require(variant.per_image[i].index == baseline.per_image[i].index, "paired statistics: image ", i,
            " is '", variant.per_image[i].name, "' for the variant but '", baseline.per_image[i].name,
            "' for the baseline");
  }
}

std::vector<bool> correct_per_image(const EvalResult& eval) {
  std::vector<bool> correct;
  for (const ImageOutcome& image : eval.per_image) correct.push_back(image.top1 == image.label);
  return correct;
}

std::vector<bool> agrees_per_image(const EvalResult& eval) {
  std::vector<bool> agrees;
  for (const ImageOutcome& image : eval.per_image) agrees.push_back(image.top1 == image.reference_top1);
  return agrees;
}

std::int64_t count_true(const std::vector<bool>& values) {
  return static_cast<std::int64_t>(std::count(values.begin(), values.end(), true));
}

bool is_baseline(const StudySpec& spec, const VariantResult& r) { return r.variant.name == spec.baseline; }

const VariantResult* find_baseline(const StudySpec& spec, const std::vector<VariantResult>& results) {
  for (const VariantResult& r : results) {
    if (is_baseline(spec, r)) return &r;
  }
  return nullptr;
}

}  // namespace

bool judge_speed(const StudySpec& spec, const VariantResult& r, std::vector<std::string>& reasons) {
  const std::string figures = cat("speed-up ", two_digits(r.speedup.median), "x (rounds ",
                                  two_digits(r.speedup.low), " .. ", two_digits(r.speedup.high), ")");
  const std::string threshold = two_digits(spec.min_speedup) + "x";
  if (r.speedup.median < spec.min_speedup) {
    reasons.push_back(cat(figures, " < ", threshold));
    return false;
  }
  if (r.speedup.low < spec.min_speedup) {
    reasons.push_back(cat(figures, " >= ", threshold, ", but its low end over the rounds is under ",
                          threshold, ": the speed margin is within the rounds' spread"));
  } else {
    reasons.push_back(cat(figures, " >= ", threshold));
  }
  return true;
}

namespace {

// One accuracy criterion: the drop's interval against its threshold, said in `reasons`.
CriterionVerdict judge_criterion(const std::string& criterion, const std::string& what,
                                 const PairedComparison& comparison, double max_drop,
                                 std::vector<std::string>& reasons) {
  CriterionVerdict verdict{criterion, max_drop, judge_drop(comparison.drop, max_drop), std::nullopt};
  std::string text = cat(what, " drops by ", drop_text(comparison.drop), ", McNemar exact p ",
                         p_value_text(comparison.mcnemar_p), " (", comparison.counts.baseline_only, " vs ",
                         comparison.counts.variant_only, " discordant images): ");
  text += drop_verdict_text(verdict.verdict, max_drop);
  if (verdict.verdict == DropVerdict::kUndecided)
    verdict.images_to_decide = images_to_decide(comparison.counts, max_drop);
  reasons.push_back(text);
  return verdict;
}

// The most images any undecided criterion needs; nullopt when one of them would never settle.
std::optional<std::int64_t> most_needed(const std::vector<CriterionVerdict>& criteria) {
  std::int64_t most = 0;
  for (const CriterionVerdict& c : criteria) {
    if (c.verdict != DropVerdict::kUndecided) continue;
    if (!c.images_to_decide) return std::nullopt;
    most = std::max(most, *c.images_to_decide);
  }
  return most;
}

// Where the auto recipe's search ended, on its calibration images, against the held-out figures.
std::optional<AutoTargetCheck> check_auto_target(const StudySpec& spec, const VariantResult& r) {
  if (!r.quantization.contains("auto") || !r.eval.reference) return std::nullopt;
  const nlohmann::json& search = r.quantization.at("auto");
  AutoTargetCheck check;
  check.target = auto_target_str(spec.auto_target);
  check.search_images = search.value("images", 0);
  const std::size_t kept = search.value("kept_out_of_fp8", std::size_t{0});
  for (const auto& point : search.value("curve", nlohmann::json::array())) {
    if (point.value("kept", std::size_t{0}) != kept) continue;
    check.search_logit_error = point.value("logit_error", 0.0);
    check.search_agreement = point.value("agreement", 0.0);
  }
  const ReferenceMetrics& held_out = *r.eval.reference;
  check.held_out_images = held_out.images();
  check.held_out_logit_error = held_out.relative_error();
  check.held_out_agreement = wilson_interval(held_out.top1_agreements(), held_out.images());
  using Verdict = AutoTargetCheck::Verdict;
  if (spec.auto_target.metric == AutoTarget::Metric::kLogitError) {
    check.verdict = check.held_out_logit_error <= spec.auto_target.value ? Verdict::kMet : Verdict::kMissed;
  } else if (check.held_out_agreement.low >= spec.auto_target.value) {
    check.verdict = Verdict::kMet;
  } else if (check.held_out_agreement.high < spec.auto_target.value) {
    check.verdict = Verdict::kMissed;
  }
  return check;
}

std::string auto_target_reason(const AutoTargetCheck& check) {
  return cat("auto's target ", check.target, " (searched on ", check.search_images,
             " calibration images: logit error ", scientific(check.search_logit_error), ", agreement ",
             points(check.search_agreement), "%) on the ", check.held_out_images,
             " held-out images: ", auto_verdict_name(check.verdict), " (logit error ",
             scientific(check.held_out_logit_error), ", agreement ",
             points(check.held_out_agreement.estimate), "%, 95% CI ", points(check.held_out_agreement.low),
             " .. ", points(check.held_out_agreement.high), ")");
}

VariantVerdict judge_variant(const StudySpec& spec, const VariantResult& r, bool labelled,
                             bool timings_sound) {
  VariantVerdict verdict;
  verdict.variant = r.variant.name;
  std::vector<std::string>& reasons = verdict.reasons;
  verdict.speed_judged = timings_sound;
  if (timings_sound) {
    verdict.speed_passes = judge_speed(spec, r, reasons);
    verdict.speed_low_end_under = r.speedup.low < spec.min_speedup;
  } else {
    reasons.push_back("speed not judged: the timings were taken on a loaded machine (see the warnings)");
  }
  const auto judge = [&](const std::string& criterion, const std::string& what,
                         const std::optional<PairedComparison>& comparison, double max_drop) {
    if (comparison) {
      verdict.criteria.push_back(judge_criterion(criterion, what, *comparison, max_drop, reasons));
    } else {
      verdict.criteria.push_back({criterion, max_drop, DropVerdict::kUndecided, std::nullopt});
      reasons.push_back(what + ": no paired figures against the baseline " + spec.baseline);
    }
  };
  if (labelled) {
    judge("top1_drop_vs_baseline", cat("top-1 against labels (vs ", spec.baseline, ")"),
          r.statistics.top1_vs_baseline, spec.max_top1_drop);
  } else {
    reasons.push_back("unlabelled data: judged on top-1 agreement with fp32 alone");
  }
  judge("top1_agreement_drop_vs_baseline", cat("top-1 agreement with fp32 (vs ", spec.baseline, ")"),
        r.statistics.agreement_vs_baseline, spec.max_agreement_drop);
  std::int64_t stress_non_finite = 0;
  for (const StressResult& s : r.eval.stress) stress_non_finite += s.non_finite.total();
  const bool non_finite = r.eval.non_finite.total() + stress_non_finite > 0;
  if (non_finite) reasons.push_back("NaN/Inf in its outputs");
  verdict.auto_target = check_auto_target(spec, r);
  if (verdict.auto_target) reasons.push_back(auto_target_reason(*verdict.auto_target));
  const auto any = [&](DropVerdict v) {
    return std::any_of(verdict.criteria.begin(), verdict.criteria.end(),
                       [&](const CriterionVerdict& c) { return c.verdict == v; });
  };
  const bool too_slow = timings_sound && !verdict.speed_passes;
  if (too_slow || non_finite || any(DropVerdict::kBeyond)) {
    verdict.outcome = ShipOutcome::kDoNotShip;
  } else if (!timings_sound) {
    verdict.outcome = ShipOutcome::kCannotTell;  // no number of images settles an unjudged speed
  } else if (any(DropVerdict::kUndecided)) {
    verdict.outcome = ShipOutcome::kCannotTell;
    verdict.images_needed = most_needed(verdict.criteria);
  } else {
    verdict.outcome = ShipOutcome::kShip;
  }
  return verdict;
}

// "fp8 all max: cannot tell with 1500 images (about 3900 would settle it): REASON; REASON"
std::string reason_line(const VariantVerdict& verdict, std::int64_t images) {
  std::string line = cat(verdict.variant, ": ", ship_outcome_name(verdict.outcome));
  if (verdict.outcome == ShipOutcome::kCannotTell && !verdict.speed_judged) {
    line += " (timed on a loaded machine)";
  } else if (verdict.outcome == ShipOutcome::kCannotTell) {
    line += cat(" with ", images, " images");
    line += verdict.images_needed ? cat(" (about ", *verdict.images_needed, " would settle it)")
                                  : std::string(" (no number of images would settle it at these rates)");
  }
  for (std::size_t i = 0; i < verdict.reasons.size(); ++i) line += (i ? "; " : ": ") + verdict.reasons[i];
  return line;
}

}  // namespace

std::string_view ship_outcome_name(ShipOutcome outcome) {
  switch (outcome) {
    case ShipOutcome::kShip:
      return "ship";
    case ShipOutcome::kDoNotShip:
      return "do not ship";
    case ShipOutcome::kCannotTell:
      return "cannot tell";
  }
  return "cannot tell";
}

std::string_view drop_verdict_name(DropVerdict verdict) {
  switch (verdict) {
    case DropVerdict::kWithin:
      return "within";
    case DropVerdict::kBeyond:
      return "beyond";
    case DropVerdict::kUndecided:
      return "undecided";
  }
  return "undecided";
}

std::string drop_verdict_text(DropVerdict verdict, double max_drop) {
  const std::string allowed = points(max_drop) + " points allowed";
  switch (verdict) {
    case DropVerdict::kWithin:
      return "the upper bound is within the " + allowed;
    case DropVerdict::kBeyond:
      return "the lower bound exceeds the " + allowed;
    case DropVerdict::kUndecided:
      break;
  }
  return "the interval straddles the " + allowed;
}

std::string_view auto_verdict_name(AutoTargetCheck::Verdict verdict) {
  switch (verdict) {
    case AutoTargetCheck::Verdict::kMet:
      return "met";
    case AutoTargetCheck::Verdict::kMissed:
      return "missed";
    case AutoTargetCheck::Verdict::kCannotTell:
      return "cannot tell";
  }
  return "cannot tell";
}

QualityStatistics quality_statistics(const EvalResult& variant, const EvalResult* baseline) {
  QualityStatistics s;
  s.images = static_cast<std::int64_t>(variant.per_image.size());
  const bool labelled = variant.labels.has_value();
  const bool referenced = variant.reference.has_value();
  if (labelled) s.top1 = wilson_interval(count_true(correct_per_image(variant)), s.images);
  if (referenced) s.agreement = wilson_interval(count_true(agrees_per_image(variant)), s.images);
  if (baseline == nullptr) return s;
  require_same_images(variant, *baseline);
  if (labelled && baseline->labels) {
    s.top1_vs_baseline =
        compare_paired(count_pairs(correct_per_image(*baseline), correct_per_image(variant)));
  }
  if (referenced && baseline->reference) {
    s.agreement_vs_baseline =
        compare_paired(count_pairs(agrees_per_image(*baseline), agrees_per_image(variant)));
  }
  return s;
}

void attach_statistics(const StudySpec& spec, std::vector<VariantResult>& variants) {
  const VariantResult* baseline = find_baseline(spec, variants);
  for (VariantResult& r : variants) {
    r.statistics =
        quality_statistics(r.eval, baseline == nullptr || is_baseline(spec, r) ? nullptr : &baseline->eval);
  }
}

StudyDecision decide(const StudySpec& spec, const std::vector<VariantResult>& results, bool timings_sound) {
  StudyDecision decision;
  decision.speed_judged = timings_sound;
  const VariantResult* baseline = find_baseline(spec, results);
  decision.labelled = baseline != nullptr && baseline->eval.labels.has_value();
  decision.held_out_images = baseline != nullptr ? baseline->statistics.images : 0;
  double best_speedup = 0.0;
  bool any_open = false;
  std::int64_t most_needed_images = 0;
  for (const VariantResult& r : results) {
    // The candidates to ship in the baseline's place: FP8, int8 and bf16 (the CPU's narrow float, which
    // pays where its kernels are native); fp32 and fp16 are the references they are judged against.
    if (is_baseline(spec, r) || (!is_quantized(r.variant.precision) && r.variant.precision != Precision::kBf16))
      continue;
    VariantVerdict verdict = judge_variant(spec, r, decision.labelled, timings_sound);
    if (verdict.outcome == ShipOutcome::kShip && r.speedup.median > best_speedup) {
      best_speedup = r.speedup.median;
      decision.variant = r.variant.name;
    }
    if (verdict.outcome == ShipOutcome::kCannotTell) {
      any_open = true;
      if (verdict.images_needed) most_needed_images = std::max(most_needed_images, *verdict.images_needed);
    }
    decision.reasons.push_back(reason_line(verdict, r.statistics.images));
    decision.verdicts.push_back(std::move(verdict));
  }
  decision.ship_fp8 = !decision.variant.empty();
  decision.outcome = decision.ship_fp8 ? ShipOutcome::kShip
                     : any_open        ? ShipOutcome::kCannotTell
                                       : ShipOutcome::kDoNotShip;
  if (decision.outcome == ShipOutcome::kCannotTell && most_needed_images > 0)
    decision.images_needed = most_needed_images;
  return decision;
}

nlohmann::json to_json(const Interval& interval) {
  return {{"estimate", interval.estimate}, {"ci95_low", interval.low}, {"ci95_high", interval.high}};
}

nlohmann::json to_json(const PairedComparison& c) {
  return {{"baseline_rate", to_json(c.baseline_rate)},
          {"variant_rate", to_json(c.variant_rate)},
          {"drop", to_json(c.drop)},
          {"drop_definition", "baseline rate - variant rate on the same images"},
          {"drop_interval_method", "Newcombe hybrid score interval for paired proportions (method 10)"},
          {"mcnemar_exact_p", c.mcnemar_p},
          {"images_both_succeed", c.counts.both},
          {"images_only_baseline_succeeds", c.counts.baseline_only},
          {"images_only_variant_succeeds", c.counts.variant_only},
          {"images_neither_succeeds", c.counts.neither}};
}

nlohmann::json to_json(const QualityStatistics& s) {
  const auto optional = [](const auto& value) { return value ? to_json(*value) : nlohmann::json(nullptr); };
  return {{"images", s.images},
          {"interval_method", "Wilson score, 95%"},
          {"top1", optional(s.top1)},
          {"top1_agreement_with_fp32", optional(s.agreement)},
          {"top1_vs_baseline", optional(s.top1_vs_baseline)},
          {"top1_agreement_vs_baseline", optional(s.agreement_vs_baseline)}};
}

nlohmann::json to_json(const StudyDecision& decision) {
  nlohmann::json variants = nlohmann::json::array();
  for (const VariantVerdict& v : decision.verdicts) {
    nlohmann::json criteria = nlohmann::json::array();
    for (const CriterionVerdict& c : v.criteria) {
      criteria.push_back(
          {{"criterion", c.criterion},
           {"max_drop", c.max_drop},
           {"verdict", std::string(drop_verdict_name(c.verdict))},
           {"images_to_decide", c.images_to_decide ? nlohmann::json(*c.images_to_decide) : nullptr}});
    }
    nlohmann::json entry = {{"name", v.variant},
                            {"outcome", std::string(ship_outcome_name(v.outcome))},
                            {"speedup_median_reaches_min", v.speed_passes},
                            {"speedup_low_end_under_min", v.speed_low_end_under},
                            {"speed_judged", v.speed_judged},
                            {"criteria", criteria},
                            {"reasons", v.reasons},
                            {"images_needed", v.images_needed ? nlohmann::json(*v.images_needed) : nullptr}};
    if (v.auto_target) {
      const AutoTargetCheck& a = *v.auto_target;
      entry["auto_target_on_held_out"] = {{"target", a.target},
                                          {"search_images", a.search_images},
                                          {"search_logit_error", a.search_logit_error},
                                          {"search_top1_agreement", a.search_agreement},
                                          {"held_out_images", a.held_out_images},
                                          {"held_out_logit_error", a.held_out_logit_error},
                                          {"held_out_top1_agreement", to_json(a.held_out_agreement)},
                                          {"verdict", std::string(auto_verdict_name(a.verdict))}};
    }
    variants.push_back(std::move(entry));
  }
  return {{"outcome", std::string(ship_outcome_name(decision.outcome))},
          {"ship_fp8", decision.ship_fp8},
          {"speed_judged", decision.speed_judged},
          {"variant", decision.variant},
          {"labelled", decision.labelled},
          {"held_out_images", decision.held_out_images},
          {"images_needed", decision.images_needed ? nlohmann::json(*decision.images_needed) : nullptr},
          {"reasons", decision.reasons},
          {"variants", variants}};
}

}  // namespace kiln
