#pragma once
// The charts of a report as standalone inline SVG (no script, no external fonts): axes with round
// tick values, a legend, and a <title> tooltip per point or bar. A chart without any finite point
// says so instead of drawing empty axes.

#include <string>

#include "common/report/page.hpp"

namespace spotlight::report {

std::string svg_line_chart(const LineChart& chart);
std::string svg_stacked_bars(const StackedBars& chart);

// Round tick values covering [lo, hi]: about `count` of them, steps of 1, 2 or 5 x 10^k.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

// Text with &, <, >, " and ' escaped for HTML and SVG.
std::string escape(const std::string& text);

// A number for people: up to 4 significant digits, no exponent for ordinary magnitudes.
std::string format_number(double value);

}  // namespace spotlight::report
