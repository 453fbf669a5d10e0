#include "study/detector_charts.h"

#include "core/error.h"
#include "study/report_format.h"
#include "study/svg_chart.h"

namespace kiln {
namespace {

// A variant's mAP in percent; the vertical bar the baseline's mAP less the drop's 95% interval.
ScatterPoint map_point(const VariantResult& r, double map, const double* baseline_map, const Interval* drop) {
  ScatterPoint point;
  point.label = r.variant.name;
  point.x = r.speedup.median;
  point.x_low = r.speedup.low;
  point.x_high = r.speedup.high;
  point.y = point.y_low = point.y_high = 100.0 * map;
  if (baseline_map != nullptr && drop != nullptr) {
    point.y_low = 100.0 * (*baseline_map - drop->high);
    point.y_high = 100.0 * (*baseline_map - drop->low);
  }
  return point;
}

}  // namespace

std::string map_chart(const DetectorStudyResult& result) {
  const StudySpec& spec = result.spec.study;
  const std::vector<VariantResult>& variants = result.study.variants;
  ScatterChart chart;
  chart.title = cat(result.study.family, ": mAP against speed (", result.study.inputs.backend, ")");
  chart.x_axis.title = cat("speed-up against ", spec.baseline, " (x, median of per-round ratios)");
  chart.y_axis.title = "mAP (%)";
  chart.y_axis.ceiling = 100.0;
  chart.demo = result.study.inputs.demo;
  ScatterSeries strict{"mAP@0.5:0.95", {}}, loose{"mAP@0.5", {}};
  const DetectorQuality* baseline = nullptr;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].variant.name == spec.baseline) baseline = &result.quality[i];
  }
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const DetectorQuality& q = result.quality[i];
    const bool paired = baseline != nullptr && q.drop.has_value();
    strict.points.push_back(map_point(variants[i], q.map.map50_95, paired ? &baseline->map.map50_95 : nullptr,
                                      paired ? &q.drop->map50_95 : nullptr));
    loose.points.push_back(map_point(variants[i], q.map.map50, paired ? &baseline->map.map50 : nullptr,
                                     paired ? &q.drop->map50 : nullptr));
  }
  chart.series = {strict, loose};
  chart.x_lines.push_back({cat("speed-up threshold ", fixed(spec.min_speedup, 2), "x"), spec.min_speedup});
  if (baseline != nullptr) {
    chart.y_lines.push_back({cat("mAP@0.5:0.95 threshold: ", spec.baseline, "'s less ",
                                 fixed(100.0 * result.spec.max_map_drop, 2), " points"),
                             100.0 * (baseline->map.map50_95 - result.spec.max_map_drop)});
    chart.y_lines.push_back({cat("mAP@0.5 threshold: ", spec.baseline, "'s less ",
                                 fixed(100.0 * result.spec.max_map50_drop, 2), " points"),
                             100.0 * (baseline->map.map50 - result.spec.max_map50_drop)});
  }
  chart.caption =
      cat("Error bars: vertical, the baseline's mAP less the 95% interval of the drop (paired "
          "bootstrap over the held-out images, ",
          result.spec.bootstrap_resamples,
          " resamples); horizontal, the lowest and highest per-round speed-up over ", spec.rounds,
          " rounds. Dashed: the thresholds; the decision judges each drop's interval against them.");
  return svg_scatter(chart);
}

}  // namespace kiln
