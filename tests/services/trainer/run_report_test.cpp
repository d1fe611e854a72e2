// The run report from a fixture run directory (no LibTorch): every section, the first and last
// validation grid side by side, skipped lines counted, missing files said.
#include "services/trainer/run_report.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/report/detail/base64.hpp"
#include "common/report/html.hpp"
#include "tests/services/trainer/report_fixture.hpp"

namespace spotlight::trainer {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSections = {"overview",  "scores", "time",        "cost",  "queue",
                                            "staleness", "grids",  "exploration", "config"};

fs::path fresh_dir(const std::string& name) {
  const auto dir =
      fs::temp_directory_path() / ("run-report-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const report::Section& section(const report::Page& page, const std::string& id) {
  for (const auto& s : page.sections)
    if (s.id == id) return s;
  throw std::runtime_error("no section " + id);
}

template <class T>
std::vector<const T*> blocks(const report::Section& s) {
  std::vector<const T*> out;
  for (const auto& b : s.blocks)
    if (const T* t = std::get_if<T>(&b)) out.push_back(t);
  return out;
}

TEST(RunReport, HasEverySectionInOrder) {
  const auto dir = fresh_dir("full");
  testing::write_report_fixture(dir);
  const report::Page page = run_report(dir);
  std::vector<std::string> ids;
  for (const auto& s : page.sections)
    ids.push_back(s.id);
  EXPECT_EQ(ids, kSections);
  EXPECT_NE(page.title.find("full"), std::string::npos);
}

TEST(RunReport, ShowsTheFirstGridAgainstTheLastAndTheOthersBehindAFold) {
  const auto dir = fresh_dir("grids");
  const auto fixture = testing::write_report_fixture(dir);
  const report::Page page = run_report(dir);
  const auto figures = blocks<report::Figures>(section(page, "grids"));
  ASSERT_EQ(figures.size(), 2u);
  ASSERT_EQ(figures[0]->figures.size(), 2u);
  EXPECT_TRUE(figures[0]->side_by_side);
  EXPECT_EQ(figures[0]->figures[0].png, read(dir / "validation" / "iter-000000.png"));
  EXPECT_EQ(figures[0]->figures[1].png, read(dir / "validation" / "iter-000006.png"));
  EXPECT_NE(figures[0]->figures[0].caption.find("base model"), std::string::npos);
  EXPECT_NE(figures[0]->figures[1].caption.find("after iteration 6"), std::string::npos);
  // The grids in between behind a fold, without repeating the first and the last.
  EXPECT_FALSE(figures[1]->details.empty());
  ASSERT_EQ(figures[1]->figures.size(), static_cast<std::size_t>(fixture.validation_grids - 2));
  EXPECT_EQ(figures[1]->figures[0].png, read(dir / "validation" / "iter-000002.png"));
}

TEST(RunReport, ChartsTheScoresTimeCostAndAudit) {
  const auto dir = fresh_dir("charts");
  const auto fixture = testing::write_report_fixture(dir);
  const report::Page page = run_report(dir);
  const auto score_charts = blocks<report::LineChart>(section(page, "scores"));
  ASSERT_EQ(score_charts.size(), 2u);
  // Base validation plus one every second iteration.
  EXPECT_EQ(score_charts[0]->series[0].points.size(), 1u + fixture.iterations / 2);
  EXPECT_EQ(score_charts[0]->series[0].points.front().first, 0.0) << "the base is iteration 0";
  EXPECT_EQ(score_charts[1]->series[0].points.front().first, 0.0) << "the base is at 0 s";
  const auto bars = blocks<report::StackedBars>(section(page, "time"));
  ASSERT_EQ(bars.size(), 1u);
  EXPECT_EQ(bars[0]->categories.size(), static_cast<std::size_t>(fixture.iterations));
  EXPECT_EQ(bars[0]->stacks[0].name, "waiting for explored seeds") << "an async run";
  EXPECT_EQ(blocks<report::LineChart>(section(page, "cost")).size(), 1u);
  EXPECT_EQ(blocks<report::LineChart>(section(page, "staleness")).at(0)->series[0].points.size(),
            static_cast<std::size_t>(fixture.iterations / 2));
  EXPECT_EQ(blocks<report::Table>(section(page, "queue")).size(), 1u);
  EXPECT_EQ(blocks<report::Figures>(section(page, "exploration")).at(0)->figures.size(),
            static_cast<std::size_t>(fixture.exploration_samples));
}

TEST(RunReport, CountsWhatItCouldNotRead) {
  const auto dir = fresh_dir("torn");
  testing::write_report_fixture(dir);
  const report::Page page = run_report(dir);
  bool said = false;
  for (const auto* p : blocks<report::Paragraph>(section(page, "overview")))
    said = said || p->text == "Skipped: 1 unreadable line(s) in metrics.jsonl.";
  EXPECT_TRUE(said);
}

TEST(RunReport, AnEmptyRunDirectoryStillHasEverySectionSayingWhatIsMissing) {
  const auto dir = fresh_dir("empty");
  fs::create_directories(dir);
  const report::Page page = run_report(dir);
  ASSERT_EQ(page.sections.size(), kSections.size());
  for (const auto& s : page.sections) {
    EXPECT_FALSE(s.blocks.empty()) << s.id;
    EXPECT_TRUE(blocks<report::Figures>(s).empty()) << s.id;
  }
  EXPECT_NO_THROW(report::render_html(page));
  EXPECT_THROW(run_report(dir / "missing"), std::invalid_argument);
}

TEST(RunReport, DeferredValidationScoresComeFromValidationJsonl) {
  const auto dir = fresh_dir("deferred");
  fs::create_directories(dir);
  std::ofstream(dir / "metrics.jsonl") << R"({"iteration": -1})"
                                       << "\n"
                                       << R"({"iteration": 0, "wall_seconds": 5.0})"
                                       << "\n"
                                       << R"({"iteration": 1, "wall_seconds": 10.0})"
                                       << "\n";
  std::ofstream(dir / "validation.jsonl")
      << R"({"version": 0, "iteration": -1, "validation": {"geneval_score": 0.25}})"
      << "\n"
      << R"({"version": 2, "iteration": 1, "validation": {"geneval_score": 0.5}})"
      << "\n";
  const report::Page page = run_report(dir);
  const auto charts = blocks<report::LineChart>(section(page, "scores"));
  ASSERT_EQ(charts.size(), 2u);
  const std::vector<std::pair<double, double>> by_iteration = {{0, 0.25}, {2, 0.5}};
  const std::vector<std::pair<double, double>> by_time = {{0, 0.25}, {10, 0.5}};
  EXPECT_EQ(charts[0]->series[0].points, by_iteration);
  EXPECT_EQ(charts[1]->series[0].points, by_time);
  bool said = false;
  for (const auto* p : blocks<report::Paragraph>(section(page, "overview")))
    said = said || p->text.find("2 iterations") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(RunReport, WritesOneSelfContainedFile) {
  const auto dir = fresh_dir("write");
  testing::write_report_fixture(dir);
  const auto path = write_run_report(dir);
  EXPECT_EQ(path, dir / "report.html");
  const std::string html = read(path);
  for (const auto& id : kSections)
    EXPECT_NE(html.find("<section id=\"" + id + "\">"), std::string::npos) << id;
  EXPECT_NE(html.find(report::detail::base64(read(dir / "validation" / "iter-000006.png"))),
            std::string::npos);
  const auto elsewhere = fresh_dir("elsewhere") / "r.html";
  EXPECT_EQ(write_run_report(dir, elsewhere), elsewhere);
  EXPECT_EQ(read(elsewhere), html);
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace spotlight::trainer
