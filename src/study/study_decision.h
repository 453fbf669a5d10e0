// A study's ship / no-ship decision from its held-out images, with the uncertainty those images leave.
//
// Every accuracy figure is a proportion over the held-out images, so it comes with a 95% interval
// (eval/accuracy_statistics.h). An FP8 variant is compared with the baseline on the same images, paired:
//  - ship when its speed-up (median over the rounds) reaches min_speedup, no output is NaN/Inf, and
//    the upper 95% bound of each accuracy drop against the baseline is within its threshold (top-1
//    against labels: max_top1_drop, on labelled data; top-1 agreement with fp32: max_agreement_drop);
//  - do not ship when the speed-up misses min_speedup, an output is NaN/Inf, or the lower 95% bound of
//    a drop exceeds its threshold;
//  - otherwise the images cannot tell: a threshold lies inside a drop's interval. The verdict says how
//    many images would settle it if the observed rates held.
// The study ships the fastest variant that ships; it cannot tell when none ships and one cannot tell.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/evaluate.h"
#include "quant/auto_recipe.h"
#include "study/study_spec.h"
#include "eval/accuracy_statistics.h"

namespace kiln {

// One variant's accuracy on the held-out images with 95% intervals, alone and against the baseline.
struct QualityStatistics {
  std::int64_t images = 0;
  std::optional<Interval> top1;       // Wilson, against labels (labelled data)
  std::optional<Interval> agreement;  // Wilson, top-1 agreement with the fp32 build
  // The baseline and this variant on the same images (absent for the baseline itself): correct
  // against labels, and agreeing with fp32.
  std::optional<PairedComparison> top1_vs_baseline;
  std::optional<PairedComparison> agreement_vs_baseline;
};

// `baseline` is null for the baseline itself. Fails when the two were not evaluated on the same
// images in the same order.
QualityStatistics quality_statistics(const EvalResult& variant, const EvalResult* baseline);

enum class ShipOutcome { kShip, kDoNotShip, kCannotTell };
std::string_view ship_outcome_name(ShipOutcome outcome);  // "ship", "do not ship", "cannot tell"
std::string_view drop_verdict_name(DropVerdict verdict);  // "within", "beyond", "undecided"
// A drop's verdict in a reason's words: "the upper bound is within the 1.00 points allowed".
std::string drop_verdict_text(DropVerdict verdict, double max_drop);

// The auto recipe searched on calibration images; whether its target holds on the held-out ones.
struct AutoTargetCheck {
  enum class Verdict { kMet, kMissed, kCannotTell };
  std::string target;              // as auto_target_str() writes it
  std::int64_t search_images = 0;  // calibration images the search compared on
  double search_logit_error = 0.0;
  double search_agreement = 0.0;
  std::int64_t held_out_images = 0;
  double held_out_logit_error = 0.0;
  Interval held_out_agreement;  // Wilson
  // logit-error: the held-out figure against the target (one aggregate, no interval); agreement: its
  // 95% interval all at or above the target (met), all below it (missed), or neither.
  Verdict verdict = Verdict::kCannotTell;
};
std::string_view auto_verdict_name(AutoTargetCheck::Verdict verdict);  // "met", "missed", "cannot tell"

// One accuracy criterion of a variant: a drop against the baseline and the most it may be.
struct CriterionVerdict {
  std::string criterion;  // "top1_drop_vs_baseline" or "top1_agreement_drop_vs_baseline"
  double max_drop = 0.0;
  DropVerdict verdict = DropVerdict::kUndecided;  // undecided too when there were no paired figures
  std::optional<std::int64_t> images_to_decide;   // undecided: images_to_decide(), when it has one
};

struct VariantVerdict {
  std::string variant;
  ShipOutcome outcome = ShipOutcome::kCannotTell;
  bool speed_passes = false;         // the median speed-up reaches min_speedup
  bool speed_low_end_under = false;  // the slowest round's speed-up does not
  bool speed_judged = true;          // false: timed on a loaded machine, so speed neither passes nor fails
  std::vector<CriterionVerdict> criteria;
  std::vector<std::string> reasons;  // one per criterion, with its figures
  // Cannot tell: the images that would settle every open criterion at the observed rates; absent when
  // none would (an observed drop equal to its threshold, or beyond a hundred million images).
  std::optional<std::int64_t> images_needed;
  std::optional<AutoTargetCheck> auto_target;  // auto recipe variants
};

struct StudyDecision {
  ShipOutcome outcome = ShipOutcome::kDoNotShip;
  bool ship_fp8 = false;                      // outcome == kShip
  std::string variant;                        // the FP8 variant to ship: the fastest that ships
  bool labelled = false;                      // top-1 against labels took part; otherwise agreement alone
  std::int64_t held_out_images = 0;           // the images every accuracy figure is measured on
  std::optional<std::int64_t> images_needed;  // cannot tell: enough to settle every undecided variant
  std::vector<std::string> reasons;           // per FP8 variant, one line: its outcome and why
  std::vector<VariantVerdict> verdicts;       // per FP8 variant, in study order
  bool speed_judged = true;                   // false: the timings were taken on a loaded machine
};

struct VariantResult;

// The speed criterion: the median speed-up over the rounds reaches spec.min_speedup; a low end under
// it is said in `reasons`, not judged.
bool judge_speed(const StudySpec& spec, const VariantResult& r, std::vector<std::string>& reasons);

// Fills every variant's `statistics` (study_runner.h) against the spec's baseline.
void attach_statistics(const StudySpec& spec, std::vector<VariantResult>& variants);

// The decision over the FP8 variants of `results`, whose `statistics` are attached. Without
// `timings_sound` (a loaded machine, machine_load.h) no speed-up is judged: a variant whose accuracy
// passes cannot tell, and none ships.
StudyDecision decide(const StudySpec& spec, const std::vector<VariantResult>& results,
                     bool timings_sound = true);

// For study.json: field names say what each number is.
nlohmann::json to_json(const Interval& interval);
nlohmann::json to_json(const PairedComparison& comparison);
nlohmann::json to_json(const QualityStatistics& statistics);
nlohmann::json to_json(const StudyDecision& decision);

}  // namespace kiln
