// Small self-contained SVG charts for study reports: horizontal bars with whiskers, and a scatter plot
// with error bars in both directions. Both have axis titles with units, ticks at 1-2-5 steps, a legend,
// dashed threshold lines, a caption under the plot and, for a demo study, a mark saying so. Plain SVG
// 1.1, no scripts or external fonts, so they render on GitHub.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln {

// The ticks of an axis covering [low, high]: multiples of one step of 1, 2 or 5 times a power of ten,
// about `target` of them, the first at or below `low` and the last at or above `high`.
std::vector<double> nice_ticks(double low, double high, int target = 5);

struct ChartAxis {
  std::string title;              // with its unit: "latency per batch (ms)"
  bool from_zero = false;         // the axis starts at 0 whatever the data
  std::optional<double> ceiling;  // the axis never goes past this (a percentage: 100)
};

// A dashed line across the plot at `value` on the value axis, named in the legend.
struct ChartLine {
  std::string label;
  double value = 0.0;
};

struct BarDatum {
  std::string label;
  double value = 0.0;
  double low = 0.0;  // whisker from low to high (equal to value: none)
  double high = 0.0;
};

struct BarChart {
  std::string title;
  ChartAxis axis;
  std::vector<BarDatum> bars;
  std::vector<ChartLine> lines;
  std::string bar_meaning;      // legend entry of a bar: "median of the round medians"
  std::string whisker_meaning;  // legend entry of a whisker: "min .. max of the round medians"
  std::string caption;
  bool demo = false;
};

std::string svg_bar_chart(const BarChart& chart);

struct ScatterPoint {
  std::string label;
  double x = 0.0, x_low = 0.0, x_high = 0.0;  // error bar from low to high (equal to x: none)
  double y = 0.0, y_low = 0.0, y_high = 0.0;
};

struct ScatterSeries {
  std::string name;  // in the legend
  std::vector<ScatterPoint> points;
};

struct ScatterChart {
  std::string title;
  ChartAxis x_axis, y_axis;
  std::vector<ScatterSeries> series;
  std::vector<ChartLine> x_lines;  // vertical, at an x value
  std::vector<ChartLine> y_lines;  // horizontal, at a y value
  std::string caption;
  bool demo = false;
};

std::string svg_scatter(const ScatterChart& chart);

}  // namespace kiln
