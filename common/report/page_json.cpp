#include "common/report/page_json.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/report/errors.hpp"
#include "common/report/svg.hpp"

namespace spotlight::report {
namespace {

using Json = nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ReportError("report: " + where + ": " + what);
}

const Json& field(const Json& object, const std::string& where, const char* name) {
  if (!object.is_object()) fail(where, "expected an object");
  const auto it = object.find(name);
  if (it == object.end()) fail(where + "." + name, "missing");
  return *it;
}

std::string text(const Json& object, const std::string& where, const char* name,
                 bool required = false) {
  if (!object.is_object()) fail(where, "expected an object");
  const auto it = object.find(name);
  if (it == object.end()) {
    if (required) fail(where + "." + name, "missing");
    return "";
  }
  if (!it->is_string()) fail(where + "." + name, "expected a string");
  return it->get<std::string>();
}

const Json& array(const Json& object, const std::string& where, const char* name) {
  const Json& value = field(object, where, name);
  if (!value.is_array()) fail(where + "." + name, "expected an array");
  return value;
}

std::vector<std::string> strings(const Json& object, const std::string& where, const char* name) {
  std::vector<std::string> out;
  const Json& values = array(object, where, name);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].is_string()) {
      out.push_back(values[i].get<std::string>());
    } else if (values[i].is_number()) {
      out.push_back(format_number(values[i].get<double>()));
    } else {
      fail(where + "." + name + "[" + std::to_string(i) + "]", "expected a string or a number");
    }
  }
  return out;
}

// Numbers; null (only where allowed) reads as NaN, which charts leave out.
std::vector<double> numbers(const Json& object, const std::string& where, const char* name,
                            bool allow_null) {
  std::vector<double> out;
  const Json& values = array(object, where, name);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].is_number()) {
      out.push_back(values[i].get<double>());
    } else if (allow_null && values[i].is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else {
      fail(where + "." + name + "[" + std::to_string(i) + "]",
           allow_null ? "expected a number or null" : "expected a number");
    }
  }
  return out;
}

std::string read_file(const std::filesystem::path& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(where, "cannot read '" + path.string() + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Block block(const Json& j, const std::string& where, const std::filesystem::path& base_dir) {
  const std::string type = text(j, where, "type", true);
  if (type == "paragraph") return Paragraph{text(j, where, "text", true)};
  if (type == "preformatted") {
    return Preformatted{text(j, where, "text", true), text(j, where, "details")};
  }
  if (type == "table") {
    Table t;
    if (j.contains("header")) t.header = strings(j, where, "header");
    const Json& rows = array(j, where, "rows");
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::string row_where = where + ".rows[" + std::to_string(r) + "]";
      if (!rows[r].is_array()) fail(row_where, "expected an array");
      t.rows.push_back(strings(Json{{"cells", rows[r]}}, row_where, "cells"));
    }
    return t;
  }
  if (type == "line_chart") {
    LineChart c{text(j, where, "title"), text(j, where, "x_label"), text(j, where, "y_label"), {}};
    const Json& series = array(j, where, "series");
    for (std::size_t i = 0; i < series.size(); ++i) {
      const std::string s_where = where + ".series[" + std::to_string(i) + "]";
      const auto x = numbers(series[i], s_where, "x", false);
      const auto y = numbers(series[i], s_where, "y", true);
      if (x.size() != y.size()) {
        fail(s_where,
             "x has " + std::to_string(x.size()) + " values, y " + std::to_string(y.size()));
      }
      Series s{text(series[i], s_where, "name"), {}};
      for (std::size_t k = 0; k < x.size(); ++k)
        s.points.emplace_back(x[k], y[k]);
      c.series.push_back(std::move(s));
    }
    return c;
  }
  if (type == "stacked_bars") {
    StackedBars c{text(j, where, "title"),
                  text(j, where, "x_label"),
                  text(j, where, "y_label"),
                  strings(j, where, "categories"),
                  {}};
    const Json& stacks = array(j, where, "stacks");
    for (std::size_t i = 0; i < stacks.size(); ++i) {
      const std::string s_where = where + ".stacks[" + std::to_string(i) + "]";
      c.stacks.push_back(
          {text(stacks[i], s_where, "name"), numbers(stacks[i], s_where, "values", true)});
    }
    return c;
  }
  if (type == "figures") {
    Figures f{{}, text(j, where, "details")};
    if (const auto it = j.find("side_by_side"); it != j.end()) {
      if (!it->is_boolean()) fail(where + ".side_by_side", "expected true or false");
      f.side_by_side = it->get<bool>();
    }
    const Json& figures = array(j, where, "figures");
    for (std::size_t i = 0; i < figures.size(); ++i) {
      const std::string f_where = where + ".figures[" + std::to_string(i) + "]";
      const std::filesystem::path file = text(figures[i], f_where, "file", true);
      f.figures.push_back(
          {read_file(file.is_absolute() ? file : base_dir / file, f_where + ".file"),
           text(figures[i], f_where, "caption")});
    }
    return f;
  }
  fail(where + ".type",
       "unknown block type '" + type +
           "' (paragraph, preformatted, table, line_chart, stacked_bars, figures)");
}

}  // namespace

Page page_from_json(std::string_view json, const std::filesystem::path& base_dir) {
  Json root;
  try {
    root = Json::parse(json);
  } catch (const Json::parse_error& e) {
    fail("page", std::string("not JSON: ") + e.what());
  }
  Page page;
  page.title = text(root, "page", "title", true);
  page.subtitle = text(root, "page", "subtitle");
  const Json& sections = array(root, "page", "sections");
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::string where = "sections[" + std::to_string(i) + "]";
    Section s{text(sections[i], where, "id", true), text(sections[i], where, "title", true), {}};
    const Json& blocks = array(sections[i], where, "blocks");
    for (std::size_t b = 0; b < blocks.size(); ++b)
      s.blocks.push_back(block(blocks[b], where + ".blocks[" + std::to_string(b) + "]", base_dir));
    page.sections.push_back(std::move(s));
  }
  return page;
}

}  // namespace spotlight::report
