#include "study/study_charts.h"

#include "core/error.h"
#include "study/report_format.h"
#include "eval/accuracy_statistics.h"
#include "study/svg_chart.h"

namespace kiln {
namespace {

// A rate in percent with its 95% Wilson interval as the vertical error bar.
void set_rate(ScatterPoint& point, std::int64_t successes, std::int64_t trials) {
  const Interval interval = wilson_interval(successes, trials);
  point.y = 100.0 * interval.estimate;
  point.y_low = 100.0 * interval.low;
  point.y_high = 100.0 * interval.high;
}

ScatterPoint speed_point(const VariantResult& r) {
  ScatterPoint point;
  point.label = r.variant.name;
  point.x = r.speedup.median;
  point.x_low = r.speedup.low;
  point.x_high = r.speedup.high;
  return point;
}

}  // namespace

std::string latency_chart(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  BarChart chart;
  chart.title = cat(result.family, ": latency per batch of ", spec.batch, " (", result.inputs.backend, ")");
  chart.axis.title = "latency per batch (ms)";
  chart.bar_meaning = cat("median of the ", spec.rounds, " round medians");
  chart.whisker_meaning = "min .. max of the round medians";
  chart.demo = result.inputs.demo;
  for (const VariantResult& r : result.variants) {
    chart.bars.push_back({r.variant.name, r.latency_ms.median, r.latency_ms.low, r.latency_ms.high});
  }
  if (const VariantResult* baseline = find_variant(result, spec.baseline)) {
    const double limit = baseline->latency_ms.median / spec.min_speedup;
    chart.lines.push_back({cat("ship threshold: ", spec.baseline, " / ", fixed(spec.min_speedup, 2), " = ",
                               fixed(limit, 3), " ms (an FP8 variant ships only left of it)"),
                           limit});
  }
  chart.caption = cat("Whiskers: the spread of the latency over the ", spec.rounds,
                      " interleaved timing rounds (lowest and highest round median); a whisker that crosses "
                      "the threshold means the rounds disagree on which side the variant is.");
  return svg_bar_chart(chart);
}

std::string accuracy_chart(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  ScatterChart chart;
  chart.title = cat(result.family, ": accuracy against speed (", result.inputs.backend, ")");
  chart.x_axis.title = cat("speed-up against ", spec.baseline, " (x, median of per-round ratios)");
  chart.y_axis.title = "top-1 (%)";
  chart.y_axis.ceiling = 100.0;
  chart.demo = result.inputs.demo;
  ScatterSeries agreement{"top-1 agreement with fp32", {}}, labelled{"top-1 against labels", {}};
  for (const VariantResult& r : result.variants) {
    if (r.eval.reference) {
      ScatterPoint point = speed_point(r);
      set_rate(point, r.eval.reference->top1_agreements(), r.eval.reference->images());
      agreement.points.push_back(point);
    }
    if (r.eval.labels) {
      ScatterPoint point = speed_point(r);
      set_rate(point, r.eval.labels->top1_correct(), r.eval.labels->images());
      labelled.points.push_back(point);
    }
  }
  if (agreement.points.empty() && labelled.points.empty()) {
    agreement.points.push_back({"no accuracy figures", 1.0, 1.0, 1.0, 0.0, 0.0, 0.0});
  }
  chart.series.push_back(agreement);
  if (!labelled.points.empty()) chart.series.push_back(labelled);
  chart.x_lines.push_back({cat("speed-up threshold ", fixed(spec.min_speedup, 2), "x"), spec.min_speedup});
  const VariantResult* baseline = find_variant(result, spec.baseline);
  if (baseline != nullptr && baseline->eval.reference) {
    const double line = 100.0 * (baseline->eval.reference->agreement() - spec.max_agreement_drop);
    chart.y_lines.push_back({cat("agreement threshold: ", spec.baseline, "'s less ",
                                 fixed(100.0 * spec.max_agreement_drop, 2), " points"),
                             line});
  }
  if (baseline != nullptr && baseline->eval.labels) {
    const double line = 100.0 * (baseline->eval.labels->top1() - spec.max_top1_drop);
    chart.y_lines.push_back(
        {cat("top-1 threshold: ", spec.baseline, "'s less ", fixed(100.0 * spec.max_top1_drop, 2), " points"),
         line});
  }
  const std::int64_t images = result.data.value("held_out_images", std::int64_t{0});
  chart.caption =
      cat("Error bars: vertical, the 95% Wilson score interval of each rate over the ", images,
          " held-out images; horizontal, the lowest and highest per-round speed-up over ", spec.rounds,
          " rounds. Dashed: the thresholds, the baseline's rate less the largest drop allowed; the decision "
          "judges each drop's paired 95% interval against them (see Summary and decision).");
  return svg_scatter(chart);
}

}  // namespace kiln
