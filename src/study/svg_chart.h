// Small self-contained SVG charts for study reports: horizontal bars with a spread whisker, and a
// labelled scatter plot. Plain SVG 1.1, no scripts or external fonts, so they render on GitHub.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct BarDatum {
  std::string label;
  double value = 0.0;
  double low = 0.0;  // spread whisker from low to high (equal to value: none)
  double high = 0.0;
};

// One bar per datum, value axis from 0; `unit` labels the axis ("ms").
std::string svg_bar_chart(const std::string& title, const std::string& unit,
                          const std::vector<BarDatum>& bars);

struct ScatterPoint {
  std::string label;
  double x = 0.0;
  double y = 0.0;
};

std::string svg_scatter(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<ScatterPoint>& points);

}  // namespace kiln
