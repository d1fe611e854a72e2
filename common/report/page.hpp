#pragma once
// A report page as data: a title and sections of blocks. render_html() (html.hpp) turns it into
// one self-contained HTML file; page_from_json() (page_json.hpp) reads it from JSON.
//
//   report::Page page{.title = "Run runs/demo-1"};
//   page.sections.push_back({"scores", "Scores", {report::LineChart{...}, report::Table{...}}});
//   report::write_html("runs/demo-1/report.html", page);

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace spotlight::report {

struct Paragraph {
  std::string text;
};

// Monospaced text (e.g. a configuration); `details` non-empty: collapsed behind that summary.
struct Preformatted {
  std::string text;
  std::string details;
};

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); points with a non-finite value are
                                                  // left out
};

// Lines over a shared x axis (numbers), one per series, with a marker per point.
struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
};

struct Stack {
  std::string name;
  std::vector<double> values;  // one per category; missing or non-finite values count as 0
};

// One bar per category, each the stacked values of every stack (e.g. time per phase).
struct StackedBars {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<Stack> stacks;
};

struct Figure {
  std::string png;  // PNG bytes, embedded as a data: URI
  std::string caption;
};

// Images at their own size, wrapping to the next line when the page is too narrow; with
// `side_by_side`, shrunk as needed to share one line instead (for comparisons such as the first
// against the last grid). `details` non-empty: collapsed behind that summary.
struct Figures {
  std::vector<Figure> figures;
  std::string details;
  bool side_by_side = false;
};

using Block = std::variant<Paragraph, Preformatted, Table, LineChart, StackedBars, Figures>;

struct Section {
  std::string id;  // the HTML id: [a-z0-9-]+, unique within the page
  std::string title;
  std::vector<Block> blocks;
};

struct Page {
  std::string title;
  std::string subtitle;
  std::vector<Section> sections;
};

}  // namespace spotlight::report
