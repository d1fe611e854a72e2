#pragma once
// One self-contained HTML file from a Page: inline CSS, charts as inline SVG, images as base64
// data: URIs, no script, and a Content-Security-Policy that forbids every network request, so it
// opens the same from a mail attachment, a CI artifact or an air-gapped machine. Every section is
// a <section id="..."> with an <h2>, linked from the page's table of contents. All text is
// escaped.

#include <filesystem>
#include <string>

#include "common/report/page.hpp"

namespace spotlight::report {

// Throws ReportError for a section id that is not [a-z0-9-]+ or not unique, or a figure that is
// not a PNG.
std::string render_html(const Page& page);

// render_html(page) written atomically to `path` (parent folders created); returns its size in
// bytes. Throws ReportError or std::filesystem::filesystem_error.
std::size_t write_html(const std::filesystem::path& path, const Page& page);

}  // namespace spotlight::report
