#include "study/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace kiln {
namespace {

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
  text << value;
  return text.str();
}

// A round axis end at or above `value`: 1, 2 or 5 times a power of ten.
double nice_ceiling(double value) {
  if (!(value > 0.0) || !std::isfinite(value)) return 1.0;
  const double power = std::pow(10.0, std::floor(std::log10(value)));
  for (const double step : {1.0, 2.0, 5.0, 10.0}) {
    if (step * power >= value) return step * power;
  }
  return 10.0 * power;
}

std::string header(int width, int height, const std::string& title) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2
      << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" << escape_xml(title)
      << "</text>\n";
  return svg.str();
}

}  // namespace

std::string svg_bar_chart(const std::string& title, const std::string& unit,
                          const std::vector<BarDatum>& bars) {
  require(!bars.empty(), "a bar chart needs at least one bar");
  constexpr int kLabelWidth = 170, kPlotWidth = 420, kBarHeight = 22, kTop = 36;
  const int height = kTop + static_cast<int>(bars.size()) * (kBarHeight + 8) + 40;
  double top = 0.0;
  for (const BarDatum& bar : bars) top = std::max({top, bar.value, bar.high});
  const double axis = nice_ceiling(top);
  const auto x_of = [&](double v) { return kLabelWidth + kPlotWidth * std::clamp(v / axis, 0.0, 1.0); };
  std::ostringstream svg;
  svg << header(kLabelWidth + kPlotWidth + 80, height, title);
  int y = kTop;
  for (const BarDatum& bar : bars) {
    svg << "<text x=\"" << kLabelWidth - 6 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">"
        << escape_xml(bar.label) << "</text>\n"
        << "<rect x=\"" << kLabelWidth << "\" y=\"" << y << "\" width=\""
        << number(x_of(bar.value) - kLabelWidth) << "\" height=\"" << kBarHeight << "\" fill=\"#4878a8\"/>\n";
    if (bar.high > bar.low) {
      svg << "<line x1=\"" << number(x_of(bar.low)) << "\" x2=\"" << number(x_of(bar.high)) << "\" y1=\""
          << y + 11 << "\" y2=\"" << y + 11 << "\" stroke=\"black\"/>\n";
    }
    svg << "<text x=\"" << number(x_of(std::max(bar.value, bar.high)) + 4) << "\" y=\"" << y + 15 << "\">"
        << number(bar.value) << "</text>\n";
    y += kBarHeight + 8;
  }
  svg << "<line x1=\"" << kLabelWidth << "\" x2=\"" << kLabelWidth + kPlotWidth << "\" y1=\"" << y
      << "\" y2=\"" << y << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << kLabelWidth << "\" y=\"" << y + 16 << "\">0</text>\n"
      << "<text x=\"" << kLabelWidth + kPlotWidth << "\" y=\"" << y + 16 << "\" text-anchor=\"end\">"
      << number(axis) << " " << escape_xml(unit) << "</text>\n</svg>\n";
  return svg.str();
}

std::string svg_scatter(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<ScatterPoint>& points) {
  require(!points.empty(), "a scatter plot needs at least one point");
  constexpr int kLeft = 70, kTop = 36, kWidth = 440, kHeight = 300;
  double x_min = points.front().x, x_max = x_min, y_min = points.front().y, y_max = y_min;
  for (const ScatterPoint& p : points) {
    x_min = std::min(x_min, p.x), x_max = std::max(x_max, p.x);
    y_min = std::min(y_min, p.y), y_max = std::max(y_max, p.y);
  }
  // Pad the ranges so single points and flat sets still have an extent.
  const auto pad = [](double& low, double& high) {
    const double span = high - low;
    const double margin = span > 0 ? 0.1 * span : std::max(std::fabs(high) * 0.1, 1e-6);
    low -= margin;
    high += margin;
  };
  pad(x_min, x_max);
  pad(y_min, y_max);
  const auto px = [&](double x) { return kLeft + kWidth * (x - x_min) / (x_max - x_min); };
  const auto py = [&](double y) { return kTop + kHeight * (1.0 - (y - y_min) / (y_max - y_min)); };
  std::ostringstream svg;
  svg << header(kLeft + kWidth + 160, kTop + kHeight + 50, title) << "<rect x=\"" << kLeft << "\" y=\""
      << kTop << "\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (const ScatterPoint& p : points) {
    svg << "<circle cx=\"" << number(px(p.x)) << "\" cy=\"" << number(py(p.y))
        << "\" r=\"4\" fill=\"#c04830\"/>\n"
        << "<text x=\"" << number(px(p.x) + 6) << "\" y=\"" << number(py(p.y) - 4) << "\">"
        << escape_xml(p.label) << "</text>\n";
  }
  svg << "<text x=\"" << kLeft << "\" y=\"" << kTop + kHeight + 16 << "\">" << number(x_min) << "</text>\n"
      << "<text x=\"" << kLeft + kWidth << "\" y=\"" << kTop + kHeight + 16 << "\" text-anchor=\"end\">"
      << number(x_max) << "</text>\n"
      << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << kTop + kHeight + 36
      << "\" text-anchor=\"middle\">" << escape_xml(x_label) << "</text>\n"
      << "<text x=\"" << kLeft - 6 << "\" y=\"" << kTop + kHeight << "\" text-anchor=\"end\">"
      << number(y_min) << "</text>\n"
      << "<text x=\"" << kLeft - 6 << "\" y=\"" << kTop + 10 << "\" text-anchor=\"end\">" << number(y_max)
      << "</text>\n"
      << "<text transform=\"translate(16," << kTop + kHeight / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape_xml(y_label) << "</text>\n</svg>\n";
  return svg.str();
}

}  // namespace kiln
