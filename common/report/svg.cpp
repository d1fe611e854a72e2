#include "common/report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace spotlight::report {
namespace {

constexpr int kWidth = 760;
constexpr int kPlotLeft = 70, kPlotRight = kWidth - 20, kPlotTop = 34;
constexpr int kPlotHeight = 240;
constexpr int kPlotBottom = kPlotTop + kPlotHeight;
constexpr double kCharWidth = 7.0;  // approximate advance of the 12 px sans-serif font
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char* colour(std::size_t i) {
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

struct Range {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};

// Axis range from the data, widened to round ticks; a flat range gets some room.
Range axis(double lo, double hi, bool from_zero = false) {
  if (from_zero) lo = std::min(lo, 0.0);
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
    if (from_zero) lo = std::min(0.0, lo + pad);
  }
  Range r;
  r.ticks = nice_ticks(lo, hi, 5);
  r.lo = std::min(lo, r.ticks.front());
  r.hi = std::max(hi, r.ticks.back());
  return r;
}

// Legend entries left to right, wrapping at the plot width; returns the height used.
int legend(std::ostringstream& out, const std::vector<std::string>& names, int top) {
  double x = kPlotLeft;
  int y = top;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double w = 26 + kCharWidth * static_cast<double>(names[i].size()) + 14;
    if (x + w > kPlotRight && x > kPlotLeft) {
      x = kPlotLeft;
      y += 18;
    }
    out << "<rect x=\"" << num(x) << "\" y=\"" << y - 9 << "\" width=\"18\" height=\"10\" fill=\""
        << colour(i) << "\"/><text x=\"" << num(x + 24) << "\" y=\"" << y << "\">"
        << escape(names[i]) << "</text>";
    x += w;
  }
  return names.empty() ? 0 : y - top + 18;
}

void axes(std::ostringstream& out, const std::string& title, const std::string& x_label,
          const std::string& y_label, const Range& y) {
  out << "<text class=\"title\" x=\"" << kPlotLeft << "\" y=\"18\">" << escape(title) << "</text>";
  for (double t : y.ticks) {
    const double py = kPlotBottom - (t - y.lo) / (y.hi - y.lo) * kPlotHeight;
    out << "<line class=\"grid\" x1=\"" << kPlotLeft << "\" x2=\"" << kPlotRight << "\" y1=\""
        << num(py) << "\" y2=\"" << num(py) << "\"/><text class=\"tick\" x=\"" << kPlotLeft - 6
        << "\" y=\"" << num(py + 4) << "\" text-anchor=\"end\">" << escape(format_number(t))
        << "</text>";
  }
  out << "<line class=\"axis\" x1=\"" << kPlotLeft << "\" x2=\"" << kPlotLeft << "\" y1=\""
      << kPlotTop << "\" y2=\"" << kPlotBottom << "\"/><line class=\"axis\" x1=\"" << kPlotLeft
      << "\" x2=\"" << kPlotRight << "\" y1=\"" << kPlotBottom << "\" y2=\"" << kPlotBottom
      << "\"/>";
  out << "<text class=\"label\" x=\"" << (kPlotLeft + kPlotRight) / 2 << "\" y=\""
      << kPlotBottom + 36 << "\" text-anchor=\"middle\">" << escape(x_label) << "</text>";
  out << "<text class=\"label\" transform=\"translate(16 " << (kPlotTop + kPlotBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(y_label) << "</text>";
}

std::string open_svg(int height, const std::string& title) {
  std::ostringstream out;
  out << "<svg class=\"chart\" viewBox=\"0 0 " << kWidth << " " << height << "\" width=\"" << kWidth
      << "\" height=\"" << height << "\" role=\"img\" aria-label=\"" << escape(title) << "\">";
  return out.str();
}

std::string empty_chart(const std::string& title) {
  std::ostringstream out;
  out << open_svg(60, title) << "<text class=\"title\" x=\"" << kPlotLeft << "\" y=\"18\">"
      << escape(title) << "</text><text x=\"" << kPlotLeft << "\" y=\"44\">no data</text></svg>";
  return out.str();
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "inf" : "-inf");
  if (value == 0) return "0";
  char buffer[32];
  const double magnitude = std::abs(value);
  if (magnitude >= 1e-3 && magnitude < 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3e", value);
  }
  return buffer;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo) || count < 1) return {lo};
  const double raw = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step);
  for (int k = 0; ticks.empty() || (ticks.back() < hi && ticks.size() < 100); ++k) {
    const double t = (first + k) * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::string svg_line_chart(const LineChart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  std::size_t finite = 0;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      ++finite;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  if (finite == 0) return empty_chart(chart.title);
  const Range xr = axis(x_lo, x_hi), yr = axis(y_lo, y_hi);
  const auto px = [&](double x) {
    return kPlotLeft + (x - xr.lo) / (xr.hi - xr.lo) * (kPlotRight - kPlotLeft);
  };
  const auto py = [&](double y) {
    return kPlotBottom - (y - yr.lo) / (yr.hi - yr.lo) * kPlotHeight;
  };

  std::ostringstream body;
  axes(body, chart.title, chart.x_label, chart.y_label, yr);
  for (double t : xr.ticks) {
    body << "<line class=\"tickmark\" x1=\"" << num(px(t)) << "\" x2=\"" << num(px(t)) << "\" y1=\""
         << kPlotBottom << "\" y2=\"" << kPlotBottom + 5 << "\"/><text class=\"tick\" x=\""
         << num(px(t)) << "\" y=\"" << kPlotBottom + 18 << "\" text-anchor=\"middle\">"
         << escape(format_number(t)) << "</text>";
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    names.push_back(s.name);
    std::ostringstream line, marks;
    std::size_t drawn = 0;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      line << (drawn++ ? " " : "") << num(px(x)) << "," << num(py(y));
      marks << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\" r=\"3\" fill=\""
            << colour(i) << "\"><title>" << escape(s.name) << ": " << escape(format_number(x))
            << ", " << escape(format_number(y)) << "</title></circle>";
    }
    if (drawn > 1) {
      body << "<polyline fill=\"none\" stroke=\"" << colour(i) << "\" stroke-width=\"2\" points=\""
           << line.str() << "\"/>";
    }
    body << marks.str();
  }
  std::ostringstream legend_svg;
  const int legend_height = legend(legend_svg, names, kPlotBottom + 60);
  return open_svg(kPlotBottom + 50 + legend_height, chart.title) + body.str() + legend_svg.str() +
         "</svg>";
}

std::string svg_stacked_bars(const StackedBars& chart) {
  const std::size_t n = chart.categories.size();
  std::vector<double> totals(n, 0.0);
  const auto value = [&](const Stack& s, std::size_t c) {
    const double v = c < s.values.size() ? s.values[c] : 0.0;
    return std::isfinite(v) && v > 0 ? v : 0.0;
  };
  for (const auto& s : chart.stacks)
    for (std::size_t c = 0; c < n; ++c)
      totals[c] += value(s, c);
  if (n == 0 || chart.stacks.empty()) return empty_chart(chart.title);
  const Range yr = axis(0.0, *std::max_element(totals.begin(), totals.end()), true);
  const auto py = [&](double y) {
    return kPlotBottom - (y - yr.lo) / (yr.hi - yr.lo) * kPlotHeight;
  };
  const double band = static_cast<double>(kPlotRight - kPlotLeft) / static_cast<double>(n);
  const std::size_t label_every = std::max<std::size_t>(1, (n + 19) / 20);

  std::ostringstream body;
  axes(body, chart.title, chart.x_label, chart.y_label, yr);
  for (std::size_t c = 0; c < n; ++c) {
    const double x = kPlotLeft + band * (static_cast<double>(c) + 0.15);
    double base = 0.0;
    for (std::size_t i = 0; i < chart.stacks.size(); ++i) {
      const double v = value(chart.stacks[i], c);
      if (v <= 0) continue;
      body << "<rect x=\"" << num(x) << "\" y=\"" << num(py(base + v)) << "\" width=\""
           << num(band * 0.7) << "\" height=\"" << num(py(base) - py(base + v)) << "\" fill=\""
           << colour(i) << "\"><title>" << escape(chart.categories[c]) << " "
           << escape(chart.stacks[i].name) << ": " << escape(format_number(v)) << "</title></rect>";
      base += v;
    }
    if (c % label_every == 0) {
      body << "<text class=\"tick\" x=\"" << num(x + band * 0.35) << "\" y=\"" << kPlotBottom + 18
           << "\" text-anchor=\"middle\">" << escape(chart.categories[c]) << "</text>";
    }
  }
  std::vector<std::string> names;
  for (const auto& s : chart.stacks)
    names.push_back(s.name);
  std::ostringstream legend_svg;
  const int legend_height = legend(legend_svg, names, kPlotBottom + 60);
  return open_svg(kPlotBottom + 50 + legend_height, chart.title) + body.str() + legend_svg.str() +
         "</svg>";
}

}  // namespace spotlight::report
