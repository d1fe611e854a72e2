#pragma once
// A Page from a JSON description, for programs that are not C++ (the benchmark):
//
//   {"title": "...", "subtitle": "...",
//    "sections": [{"id": "curves", "title": "...", "blocks": [
//       {"type": "paragraph", "text": "..."},
//       {"type": "preformatted", "text": "...", "details": "optional summary"},
//       {"type": "table", "header": ["mode", "time"], "rows": [["none", 12.5], ...]},
//       {"type": "line_chart", "title": "...", "x_label": "...", "y_label": "...",
//        "series": [{"name": "none s0", "x": [...], "y": [...]}]},
//       {"type": "stacked_bars", "title": "...", "x_label": "...", "y_label": "...",
//        "categories": ["1", "2"], "stacks": [{"name": "rollout", "values": [...]}]},
//       {"type": "figures", "details": "optional summary", "side_by_side": false,
//        "figures": [{"file": "curves.png", "caption": "..."}]}]}]}
//
// Table cells may be strings or numbers (numbers are shown with format_number()); y values may be
// null (left out). Figure files are read relative to `base_dir`. "title", "x_label", "y_label",
// "subtitle", "details" and "caption" are optional.

#include <filesystem>
#include <string_view>

#include "common/report/page.hpp"

namespace spotlight::report {

// Throws ReportError naming the field ("sections[0].blocks[2].series[1].y: ...") for anything
// malformed, and for a figure file that cannot be read.
Page page_from_json(std::string_view json, const std::filesystem::path& base_dir);

}  // namespace spotlight::report
