#include "common/report/html.hpp"

#include <set>
#include <sstream>

#include "common/image/png.hpp"
#include "common/report/detail/base64.hpp"
#include "common/report/errors.hpp"
#include "common/report/svg.hpp"

namespace spotlight::report {
namespace {

// No script, no network: images only from data: URIs, styles only inline.
constexpr const char* kPolicy =
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'";

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2125;
       background: #f6f7f9; }
header { background: #1d2733; color: #f3f5f7; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: #c4ccd6; }
nav { margin-top: 10px; }
nav a { color: #9fd0ff; margin-right: 14px; text-decoration: none; }
main { padding: 8px 28px 40px; max-width: 1600px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; margin: 18px 0;
          padding: 8px 20px 16px; }
h2 { font-size: 18px; margin: 10px 0; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #dde1e6; padding: 3px 9px; text-align: right; }
th { background: #f0f2f5; }
td:first-child, th:first-child { text-align: left; }
pre { background: #f0f2f5; padding: 8px; overflow-x: auto; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 6px 0; }
figure img { max-width: 100%; image-rendering: pixelated; border: 1px solid #dde1e6; }
figcaption { color: #4a525b; margin-top: 4px; max-width: 760px; }
.side-by-side { flex-wrap: nowrap; }
.side-by-side figure { flex: 1 1 0; min-width: 0; }
svg.chart { max-width: 100%; height: auto; font: 12px sans-serif; margin: 8px 0; }
svg .title { font-size: 14px; font-weight: 600; }
svg .grid { stroke: #e6e9ed; }
svg .axis, svg .tickmark { stroke: #59616b; }
svg .tick { fill: #59616b; }
)";

bool valid_id(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

bool is_png(const std::string& bytes) {
  static constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
  return bytes.size() > 8 && bytes.compare(0, 8, kSignature, 8) == 0;
}

struct BlockWriter {
  std::ostringstream& out;
  const std::string& where;

  void operator()(const Paragraph& p) { out << "<p>" << escape(p.text) << "</p>\n"; }
  void operator()(const Preformatted& p) {
    if (!p.details.empty()) out << "<details><summary>" << escape(p.details) << "</summary>";
    out << "<pre>" << escape(p.text) << "</pre>";
    if (!p.details.empty()) out << "</details>";
    out << "\n";
  }
  void operator()(const Table& t) {
    out << "<table>";
    if (!t.header.empty()) {
      out << "<thead><tr>";
      for (const auto& h : t.header)
        out << "<th>" << escape(h) << "</th>";
      out << "</tr></thead>";
    }
    out << "<tbody>";
    for (const auto& row : t.rows) {
      out << "<tr>";
      for (const auto& cell : row)
        out << "<td>" << escape(cell) << "</td>";
      out << "</tr>";
    }
    out << "</tbody></table>\n";
  }
  void operator()(const LineChart& c) { out << svg_line_chart(c) << "\n"; }
  void operator()(const StackedBars& c) { out << svg_stacked_bars(c) << "\n"; }
  void operator()(const Figures& f) {
    if (!f.details.empty()) out << "<details><summary>" << escape(f.details) << "</summary>";
    out << (f.side_by_side ? "<div class=\"figures side-by-side\">" : "<div class=\"figures\">");
    for (const auto& figure : f.figures) {
      if (!is_png(figure.png)) {
        throw ReportError("report: section '" + where + "': figure '" + figure.caption +
                          "' is not a PNG");
      }
      out << "<figure><img alt=\"" << escape(figure.caption) << "\" src=\"data:image/png;base64,"
          << detail::base64(figure.png) << "\"><figcaption>" << escape(figure.caption)
          << "</figcaption></figure>";
    }
    out << "</div>";
    if (!f.details.empty()) out << "</details>";
    out << "\n";
  }
};

}  // namespace

std::string render_html(const Page& page) {
  std::set<std::string> ids;
  for (const auto& s : page.sections) {
    if (!valid_id(s.id)) throw ReportError("report: section id '" + s.id + "' is not [a-z0-9-]+");
    if (!ids.insert(s.id).second) throw ReportError("report: section id '" + s.id + "' repeats");
  }
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"" << kPolicy << "\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<link rel=\"icon\" href=\"data:,\"><title>" << escape(page.title) << "</title><style>"
      << kStyle << "</style></head>\n<body><header><h1>" << escape(page.title) << "</h1>";
  if (!page.subtitle.empty()) out << "<p>" << escape(page.subtitle) << "</p>";
  out << "<nav>";
  for (const auto& s : page.sections)
    out << "<a href=\"#" << s.id << "\">" << escape(s.title) << "</a>";
  out << "</nav></header>\n<main>\n";
  for (const auto& s : page.sections) {
    out << "<section id=\"" << s.id << "\"><h2>" << escape(s.title) << "</h2>\n";
    BlockWriter writer{out, s.id};
    for (const auto& block : s.blocks)
      std::visit(writer, block);
    out << "</section>\n";
  }
  out << "</main></body></html>\n";
  return out.str();
}

std::size_t write_html(const std::filesystem::path& path, const Page& page) {
  const std::string html = render_html(page);
  image::write_file_atomically(path, html);
  return html.size();
}

}  // namespace spotlight::report
