#include "study/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "core/error.h"

namespace kiln {
namespace {

constexpr const char* kSeriesColours[] = {"#c04830", "#4878a8", "#3a8a3a", "#8a5ac0"};
constexpr const char* kLineColours[] = {"#d62728", "#9467bd", "#2ca02c", "#ff7f0e"};
constexpr const char* kBarColour = "#4878a8";

const char* series_colour(std::size_t i) { return kSeriesColours[i % std::size(kSeriesColours)]; }
const char* line_colour(std::size_t i) { return kLineColours[i % std::size(kLineColours)]; }

std::string escape_xml(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double value) {
  std::ostringstream text;
  text.precision(4);
  text << (std::fabs(value) < 1e-12 ? 0.0 : value);  // no "-0" or "1e-17" at a tick meant as 0
  return text.str();
}

// The axis's extent and ticks for values spanning [low, high].
struct Scale {
  double low = 0.0, high = 1.0;
  std::vector<double> ticks;
};

Scale make_scale(double low, double high, const ChartAxis& axis) {
  if (axis.from_zero) low = std::min(low, 0.0);
  if (axis.ceiling) high = std::min(high, *axis.ceiling);
  Scale scale;
  scale.ticks = nice_ticks(low, high);
  if (axis.ceiling) {
    while (scale.ticks.size() > 2 && scale.ticks.back() > *axis.ceiling + 1e-9) scale.ticks.pop_back();
    if (scale.ticks.back() < *axis.ceiling && high > scale.ticks.back()) scale.ticks.push_back(*axis.ceiling);
  }
  scale.low = scale.ticks.front();
  scale.high = std::max(scale.ticks.back(), scale.low + 1e-12);
  return scale;
}

// The fraction of the axis `value` lies at, clamped to it.
double position(const Scale& scale, double value) {
  return std::clamp((value - scale.low) / (scale.high - scale.low), 0.0, 1.0);
}

std::string header(int width, int height, const std::string& title, bool demo) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2
      << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" << escape_xml(title)
      << "</text>\n";
  if (demo) {
    svg << "<text x=\"" << width / 2 << "\" y=\"36\" text-anchor=\"middle\" fill=\"#d62728\" "
        << "font-weight=\"bold\">DEMO: a reduced model on the repository's test data, not the full-size "
           "model's figures</text>\n";
  }
  return svg.str();
}

// One legend row: a swatch drawn by `swatch` at (x, y) and its text.
struct LegendEntry {
  std::string swatch;  // SVG drawn in a 24 x 12 box whose top left is (0, 0), translated into place
  std::string text;
};

LegendEntry line_entry(const ChartLine& line, std::size_t i) {
  return {cat("<line x1=\"0\" x2=\"24\" y1=\"6\" y2=\"6\" stroke=\"", line_colour(i),
              "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>"),
          line.label};
}

// Legend rows then the caption, wrapped, from (x, y) down; returns the SVG and advances y.
std::string legend_and_caption(int x, int& y, const std::vector<LegendEntry>& entries,
                               const std::string& caption, std::size_t wrap) {
  std::ostringstream svg;
  for (const LegendEntry& entry : entries) {
    svg << "<g transform=\"translate(" << x << "," << y << ")\">" << entry.swatch << "</g>\n<text x=\""
        << x + 30 << "\" y=\"" << y + 10 << "\">" << escape_xml(entry.text) << "</text>\n";
    y += 18;
  }
  std::istringstream words(caption);
  std::string line, word;
  const auto flush = [&] {
    svg << "<text x=\"" << x << "\" y=\"" << y + 12 << "\" font-style=\"italic\" fill=\"#444\">"
        << escape_xml(line) << "</text>\n";
    y += 16;
    line.clear();
  };
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > wrap) flush();
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) flush();
  return svg.str();
}

// Rows of 18 px the legend and caption will take.
int legend_height(std::size_t entries, const std::string& caption, std::size_t wrap) {
  return static_cast<int>(entries) * 18 + static_cast<int>((caption.size() + wrap - 1) / wrap + 1) * 16 + 8;
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int target) {
  if (!std::isfinite(low) || !std::isfinite(high)) low = 0.0, high = 1.0;
  if (high < low) std::swap(low, high);
  if (high - low < 1e-12) {
    const double pad = std::max(std::fabs(high) * 0.1, 1e-6);
    low -= pad;
    high += pad;
  }
  const double raw = (high - low) / std::max(target, 1);
  // step = multiple * 10^exponent; ticks are computed as whole numbers of (multiple * 10^exponent),
  // dividing by a power of ten for small steps, so 3 * 0.2 comes out as 0.6.
  int exponent = static_cast<int>(std::floor(std::log10(raw)));
  double multiple = 10.0;
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * std::pow(10.0, exponent) >= raw) {
      multiple = m;
      break;
    }
  }
  if (multiple == 10.0) multiple = 1.0, ++exponent;
  const double scale = std::pow(10.0, std::abs(exponent));
  const auto tick_at = [&](double n) { return exponent < 0 ? n * multiple / scale : n * multiple * scale; };
  const double step = tick_at(1.0);
  std::vector<double> ticks;
  const double first = std::floor(low / step + 1e-9);
  for (double k = first;; ++k) {
    ticks.push_back(tick_at(k));
    if (ticks.back() >= high - 1e-9 * step) break;
  }
  return ticks;
}

std::string svg_bar_chart(const BarChart& chart) {
  require(!chart.bars.empty(), "a bar chart needs at least one bar");
  constexpr int kLabelWidth = 170, kPlotWidth = 460, kBarHeight = 22, kWrap = 95;
  const int top = chart.demo ? 48 : 36;
  const int plot_height = static_cast<int>(chart.bars.size()) * (kBarHeight + 8);
  double high = 0.0;
  for (const BarDatum& bar : chart.bars) high = std::max({high, bar.value, bar.high});
  for (const ChartLine& line : chart.lines) high = std::max(high, line.value);
  ChartAxis axis = chart.axis;
  axis.from_zero = true;
  const Scale scale = make_scale(0.0, high, axis);
  const auto x_of = [&](double v) { return kLabelWidth + kPlotWidth * position(scale, v); };
  const std::size_t entries = 2 + chart.lines.size();
  const int width = kLabelWidth + kPlotWidth + 90;
  const int height = top + plot_height + 48 + legend_height(entries, chart.caption, kWrap);
  std::ostringstream svg;
  svg << header(width, height, chart.title, chart.demo);
  const int axis_y = top + plot_height;
  for (const double tick : scale.ticks) {
    svg << "<line x1=\"" << number(x_of(tick)) << "\" x2=\"" << number(x_of(tick)) << "\" y1=\"" << top
        << "\" y2=\"" << axis_y + 4 << "\" stroke=\"#ddd\"/>\n<text x=\"" << number(x_of(tick)) << "\" y=\""
        << axis_y + 17 << "\" text-anchor=\"middle\">" << number(tick) << "</text>\n";
  }
  int y = top;
  for (const BarDatum& bar : chart.bars) {
    svg << "<text x=\"" << kLabelWidth - 6 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">"
        << escape_xml(bar.label) << "</text>\n<rect x=\"" << kLabelWidth << "\" y=\"" << y << "\" width=\""
        << number(x_of(bar.value) - kLabelWidth) << "\" height=\"" << kBarHeight << "\" fill=\"" << kBarColour
        << "\"/>\n";
    if (bar.high > bar.low) {
      const std::string lo = number(x_of(bar.low)), hi = number(x_of(bar.high));
      svg << "<path d=\"M" << lo << " " << y + 11 << "H" << hi << "M" << lo << " " << y + 5 << "V" << y + 17
          << "M" << hi << " " << y + 5 << "V" << y + 17 << "\" stroke=\"black\" fill=\"none\"/>\n";
    }
    svg << "<text x=\"" << number(x_of(std::max(bar.value, bar.high)) + 4) << "\" y=\"" << y + 15 << "\">"
        << number(bar.value) << "</text>\n";
    y += kBarHeight + 8;
  }
  std::vector<LegendEntry> legend = {
      {cat("<rect width=\"24\" height=\"12\" fill=\"", kBarColour, "\"/>"), chart.bar_meaning},
      {"<path d=\"M0 6H24M0 0V12M24 0V12\" stroke=\"black\" fill=\"none\"/>", chart.whisker_meaning}};
  for (std::size_t i = 0; i < chart.lines.size(); ++i) {
    const std::string x = number(x_of(chart.lines[i].value));
    svg << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << top - 4 << "\" y2=\"" << axis_y
        << "\" stroke=\"" << line_colour(i) << "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n";
    legend.push_back(line_entry(chart.lines[i], i));
  }
  svg << "<line x1=\"" << kLabelWidth << "\" x2=\"" << kLabelWidth + kPlotWidth << "\" y1=\"" << axis_y
      << "\" y2=\"" << axis_y << "\" stroke=\"black\"/>\n<text x=\"" << kLabelWidth + kPlotWidth / 2
      << "\" y=\"" << axis_y + 36 << "\" text-anchor=\"middle\">" << escape_xml(chart.axis.title)
      << "</text>\n";
  int legend_y = axis_y + 48;
  svg << legend_and_caption(20, legend_y, legend, chart.caption, kWrap) << "</svg>\n";
  return svg.str();
}

namespace {

struct ScatterFrame {
  static constexpr int kLeft = 70, kWidth = 460, kHeight = 300;
  int top = 36;
  Scale x, y;
  double px(double v) const { return kLeft + kWidth * position(x, v); }
  double py(double v) const { return top + kHeight * (1.0 - position(y, v)); }
};

// Grid, ticks and axis titles of the scatter's plot area.
std::string scatter_axes(const ScatterFrame& f, const ScatterChart& chart) {
  std::ostringstream svg;
  const int bottom = f.top + ScatterFrame::kHeight;
  for (const double tick : f.x.ticks) {
    const std::string x = number(f.px(tick));
    svg << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << f.top << "\" y2=\"" << bottom + 4
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << x << "\" y=\"" << bottom + 17 << "\" text-anchor=\"middle\">"
        << number(tick) << "</text>\n";
  }
  for (const double tick : f.y.ticks) {
    const std::string y = number(f.py(tick));
    svg << "<line x1=\"" << ScatterFrame::kLeft - 4 << "\" x2=\""
        << ScatterFrame::kLeft + ScatterFrame::kWidth << "\" y1=\"" << y << "\" y2=\"" << y
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << ScatterFrame::kLeft - 7 << "\" y=\"" << y
        << "\" dy=\"4\" text-anchor=\"end\">" << number(tick) << "</text>\n";
  }
  svg << "<rect x=\"" << ScatterFrame::kLeft << "\" y=\"" << f.top << "\" width=\"" << ScatterFrame::kWidth
      << "\" height=\"" << ScatterFrame::kHeight << "\" fill=\"none\" stroke=\"black\"/>\n<text x=\""
      << ScatterFrame::kLeft + ScatterFrame::kWidth / 2 << "\" y=\"" << bottom + 36
      << "\" text-anchor=\"middle\">" << escape_xml(chart.x_axis.title)
      << "</text>\n<text transform=\"translate(18," << f.top + ScatterFrame::kHeight / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape_xml(chart.y_axis.title) << "</text>\n";
  return svg.str();
}

// A point with its error bars (capped lines) and label.
std::string scatter_point(const ScatterFrame& f, const ScatterPoint& p, const char* colour) {
  std::ostringstream svg;
  const std::string cx = number(f.px(p.x)), cy = number(f.py(p.y));
  if (p.x_high > p.x_low) {
    const std::string lo = number(f.px(p.x_low)), hi = number(f.px(p.x_high));
    svg << "<path d=\"M" << lo << " " << cy << "H" << hi << "M" << lo << " " << f.py(p.y) - 4 << "v8M" << hi
        << " " << f.py(p.y) - 4 << "v8\" stroke=\"" << colour << "\" fill=\"none\"/>\n";
  }
  if (p.y_high > p.y_low) {
    const std::string lo = number(f.py(p.y_low)), hi = number(f.py(p.y_high));
    svg << "<path d=\"M" << cx << " " << lo << "V" << hi << "M" << f.px(p.x) - 4 << " " << lo << "h8M"
        << f.px(p.x) - 4 << " " << hi << "h8\" stroke=\"" << colour << "\" fill=\"none\"/>\n";
  }
  svg << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"4\" fill=\"" << colour << "\"/>\n<text x=\""
      << number(f.px(p.x) + 6) << "\" y=\"" << number(f.py(p.y) - 5) << "\" font-size=\"11\">"
      << escape_xml(p.label) << "</text>\n";
  return svg.str();
}

// The extent of every point, error bar and line along one axis.
template <typename Get>
std::pair<double, double> extent(const ScatterChart& chart, const std::vector<ChartLine>& lines, Get get) {
  double low = INFINITY, high = -INFINITY;
  for (const ScatterSeries& series : chart.series) {
    for (const ScatterPoint& p : series.points) {
      const auto [value, lo, hi] = get(p);
      low = std::min({low, value, lo}), high = std::max({high, value, hi});
    }
  }
  for (const ChartLine& line : lines) low = std::min(low, line.value), high = std::max(high, line.value);
  return {low, high};
}

}  // namespace

std::string svg_scatter(const ScatterChart& chart) {
  const bool any = std::any_of(chart.series.begin(), chart.series.end(),
                               [](const ScatterSeries& s) { return !s.points.empty(); });
  require(any, "a scatter plot needs at least one point");
  constexpr int kWrap = 85;
  ScatterFrame f;
  f.top = chart.demo ? 48 : 36;
  const auto [x_low, x_high] = extent(chart, chart.x_lines, [](const ScatterPoint& p) {
    return std::tuple{p.x, p.x_low, p.x_high};
  });
  const auto [y_low, y_high] = extent(chart, chart.y_lines, [](const ScatterPoint& p) {
    return std::tuple{p.y, p.y_low, p.y_high};
  });
  f.x = make_scale(x_low, x_high, chart.x_axis);
  f.y = make_scale(y_low, y_high, chart.y_axis);
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    legend.push_back({cat("<circle cx=\"12\" cy=\"6\" r=\"4\" fill=\"", series_colour(i),
                          "\"/><path d=\"M12 0V12M0 6H24\" stroke=\"", series_colour(i), "\"/>"),
                      chart.series[i].name});
  }
  const std::size_t entries = legend.size() + chart.x_lines.size() + chart.y_lines.size();
  const int width = ScatterFrame::kLeft + ScatterFrame::kWidth + 150;
  const int legend_top = f.top + ScatterFrame::kHeight + 50;
  std::ostringstream svg;
  svg << header(width, legend_top + legend_height(entries, chart.caption, kWrap), chart.title, chart.demo)
      << scatter_axes(f, chart);
  std::size_t line_index = 0;
  for (const ChartLine& line : chart.x_lines) {
    const std::string x = number(f.px(line.value));
    svg << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << f.top << "\" y2=\""
        << f.top + ScatterFrame::kHeight << "\" stroke=\"" << line_colour(line_index)
        << "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n";
    legend.push_back(line_entry(line, line_index++));
  }
  for (const ChartLine& line : chart.y_lines) {
    const std::string y = number(f.py(line.value));
    svg << "<line x1=\"" << ScatterFrame::kLeft << "\" x2=\"" << ScatterFrame::kLeft + ScatterFrame::kWidth
        << "\" y1=\"" << y << "\" y2=\"" << y << "\" stroke=\"" << line_colour(line_index)
        << "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n";
    legend.push_back(line_entry(line, line_index++));
  }
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    for (const ScatterPoint& p : chart.series[i].points) svg << scatter_point(f, p, series_colour(i));
  }
  int y = legend_top;
  svg << legend_and_caption(20, y, legend, chart.caption, kWrap) << "</svg>\n";
  return svg.str();
}

}  // namespace kiln
