#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/image/png.hpp"
#include "common/report/detail/base64.hpp"
#include "common/report/errors.hpp"
#include "common/report/html.hpp"
#include "common/report/page_json.hpp"
#include "common/report/svg.hpp"

namespace spotlight::report {
namespace {

std::string tiny_png() {
  return image::encode_png(image::RgbImage::filled(3, 2, image::Rgb{200, 10, 10}));
}

Page sample_page() {
  Page page{"Run <demo> & co", "runs/demo", {}};
  page.sections.push_back(
      {"scores",
       "Scores",
       {Paragraph{"a < b"}, LineChart{"score",
                                      "iteration",
                                      "score",
                                      {{"val", {{0, 0.3}, {4, 0.35}, {8, NAN}, {12, 0.42}}}}}}});
  page.sections.push_back(
      {"time",
       "Time",
       {StackedBars{
            "split", "iteration", "s", {"1", "2"}, {{"rollout", {1.0, 2.0}}, {"train", {0.5}}}},
        Table{{"phase", "s"}, {{"rollout", "3"}, {"<b>", "\"x\""}}}}});
  page.sections.push_back(
      {"grids",
       "Grids",
       {Figures{{{tiny_png(), "iteration 0"}}, ""}, Figures{{{tiny_png(), "all"}}, "every grid"}}});
  return page;
}

TEST(Html, EverySectionIsThereWithItsHeadingAndNavigationLink) {
  const std::string html = render_html(sample_page());
  for (const char* id : {"scores", "time", "grids"}) {
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\"><h2>"), std::string::npos) << id;
    EXPECT_NE(html.find("<a href=\"#" + std::string(id) + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(html.find("<details><summary>every grid</summary>"), std::string::npos);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
}

TEST(Html, TextIsEscapedEverywhere) {
  const std::string html = render_html(sample_page());
  EXPECT_NE(html.find("Run &lt;demo&gt; &amp; co"), std::string::npos);
  EXPECT_NE(html.find("<p>a &lt; b</p>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;b&gt;</td><td>&quot;x&quot;</td>"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(escape("'&'"), "&#39;&amp;&#39;");
}

TEST(Html, IsSelfContainedAndForbidsNetworkRequests) {
  const std::string html = render_html(sample_page());
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'; img-src data:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // No attribute points anywhere but into the page or a data: URI.
  static const std::regex link("(src|href)=\"([^\"]*)\"");
  int links = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), link); it != std::sregex_iterator();
       ++it, ++links) {
    const std::string target = (*it)[2].str();
    EXPECT_TRUE(target.starts_with("data:") || target.starts_with("#")) << target;
  }
  EXPECT_GE(links, 5);
  // The embedded PNG is the exact bytes, base64.
  EXPECT_NE(html.find("data:image/png;base64," + detail::base64(tiny_png())), std::string::npos);
}

TEST(Html, RejectsBadIdsAndFiguresThatAreNotPng) {
  Page page{"t", "", {{"Bad Id", "x", {}}}};
  EXPECT_THROW(render_html(page), ReportError);
  page.sections = {{"a", "x", {}}, {"a", "y", {}}};
  EXPECT_THROW(render_html(page), ReportError);
  page.sections = {{"a", "x", {Figures{{{"GIF89a...", "not a png"}}, ""}}}};
  EXPECT_THROW(render_html(page), ReportError);
}

TEST(Base64, MatchesTheRfcVectors) {
  EXPECT_EQ(detail::base64(""), "");
  EXPECT_EQ(detail::base64("f"), "Zg==");
  EXPECT_EQ(detail::base64("fo"), "Zm8=");
  EXPECT_EQ(detail::base64("foo"), "Zm9v");
  EXPECT_EQ(detail::base64("foob"), "Zm9vYg==");
  EXPECT_EQ(detail::base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(detail::base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(detail::base64(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(Charts, TicksAreRoundAndCoverTheRange) {
  for (const auto& [lo, hi] : {std::pair{0.31, 0.43}, {0.0, 1.0}, {-3.0, 250.0}, {1e-5, 3e-5}}) {
    const auto ticks = nice_ticks(lo, hi, 5);
    ASSERT_GE(ticks.size(), 2u) << lo << " " << hi;
    EXPECT_LE(ticks.front(), lo);
    EXPECT_GE(ticks.back(), hi);
    EXPECT_LE(ticks.size(), 12u);
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << step;
  }
}

TEST(Charts, LineChartDrawsEveryFinitePointAndALegend) {
  LineChart chart{"t", "x", "y", {{"a", {{0, 1}, {1, 2}, {2, NAN}}}, {"b & c", {{0, 3}}}}};
  const std::string svg = svg_line_chart(chart);
  std::size_t circles = 0;
  for (std::size_t at = svg.find("<circle"); at != std::string::npos;
       at = svg.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 3u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find(">b &amp; c</text>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(svg_line_chart(LineChart{"empty", "", "", {{"a", {{NAN, 1}}}}}).find("no data"),
            std::string::npos);
  // A flat series still gets a y range.
  EXPECT_EQ(svg_line_chart(LineChart{"flat", "", "", {{"a", {{0, 2}, {1, 2}}}}}).find("nan"),
            std::string::npos);
}

TEST(Charts, StackedBarsStackEveryPositiveValue) {
  StackedBars bars{"t", "x", "y", {"1", "2", "3"}, {{"a", {1, 2, 3}}, {"b", {1, NAN, -1}}}};
  const std::string svg = svg_stacked_bars(bars);
  std::size_t rects = 0;
  for (std::size_t at = svg.find("<rect x"); at != std::string::npos;
       at = svg.find("<rect x", at + 1))
    ++rects;
  EXPECT_EQ(rects, 4u + 2u) << "4 bars and 2 legend swatches";
  EXPECT_NE(svg_stacked_bars(StackedBars{"t", "", "", {}, {}}).find("no data"), std::string::npos);
}

TEST(PageJson, ReadsEveryBlockType) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("report-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "curves.png", std::ios::binary) << tiny_png();
  const std::string json = R"({
    "title": "benchmark", "subtitle": "3 modes",
    "sections": [{"id": "results", "title": "Results", "blocks": [
      {"type": "paragraph", "text": "hello"},
      {"type": "preformatted", "text": "a: 1", "details": "config"},
      {"type": "table", "header": ["mode", "seconds"], "rows": [["none", 12.5], ["async", 3]]},
      {"type": "line_chart", "title": "score", "x_label": "s", "y_label": "score",
       "series": [{"name": "none s0", "x": [0, 1, 2], "y": [0.3, null, 0.4]}]},
      {"type": "stacked_bars", "categories": ["1", 2], "stacks": [{"name": "a", "values": [1, 2]}]},
      {"type": "figures", "side_by_side": true,
       "figures": [{"file": "curves.png", "caption": "curves"}]}]}]})";
  const Page page = page_from_json(json, dir);
  ASSERT_EQ(page.sections.size(), 1u);
  ASSERT_EQ(page.sections[0].blocks.size(), 6u);
  const auto& table = std::get<Table>(page.sections[0].blocks[2]);
  EXPECT_EQ(table.rows[0][1], "12.5");
  const auto& chart = std::get<LineChart>(page.sections[0].blocks[3]);
  EXPECT_TRUE(std::isnan(chart.series[0].points[1].second));
  EXPECT_EQ(std::get<StackedBars>(page.sections[0].blocks[4]).categories[1], "2");
  EXPECT_EQ(std::get<Figures>(page.sections[0].blocks[5]).figures[0].png, tiny_png());
  EXPECT_TRUE(std::get<Figures>(page.sections[0].blocks[5]).side_by_side);
  EXPECT_NE(render_html(page).find("<div class=\"figures side-by-side\">"), std::string::npos);
  EXPECT_NO_THROW(render_html(page));
  std::filesystem::remove_all(dir);
}

TEST(PageJson, ErrorsNameTheField) {
  const auto expect_error = [](const std::string& json, const std::string& field) {
    try {
      page_from_json(json, ".");
      ADD_FAILURE() << "accepted: " << json;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_error("{", "not JSON");
  expect_error(R"({"sections": []})", "page.title");
  expect_error(
      R"({"title": "t", "sections": [{"id": "a", "title": "A", "blocks": [{"type": "x"}]}]})",
      "sections[0].blocks[0].type");
  expect_error(R"({"title": "t", "sections": [{"id": "a", "title": "A", "blocks": [
      {"type": "line_chart", "series": [{"name": "s", "x": [1, 2], "y": [1]}]}]}]})",
               "sections[0].blocks[0].series[0]");
  expect_error(R"({"title": "t", "sections": [{"id": "a", "title": "A", "blocks": [
      {"type": "table", "rows": [[{"nested": 1}]]}]}]})",
               "sections[0].blocks[0].rows[0]");
  expect_error(R"({"title": "t", "sections": [{"id": "a", "title": "A", "blocks": [
      {"type": "figures", "figures": [{"file": "/nonexistent/x.png"}]}]}]})",
               "sections[0].blocks[0].figures[0].file");
}

}  // namespace
}  // namespace spotlight::report
