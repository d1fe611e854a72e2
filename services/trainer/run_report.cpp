#include "services/trainer/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/report/html.hpp"
#include "common/report/svg.hpp"

namespace spotlight::trainer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using report::Block;
using report::Figure;
using report::Figures;
using report::LineChart;
using report::Paragraph;
using report::Section;
using report::Series;
using report::Table;

constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;  // anything larger is not ours
constexpr std::size_t kShownExplorationSamples = 4;

std::optional<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > kMaxFileBytes) {
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Inputs {
  fs::path dir;
  std::optional<Json> summary;
  std::map<int64_t, Json> iterations;  // metrics.jsonl by iteration (-1: the base validation)
  std::map<int64_t, Json> cost;        // cost.jsonl by iteration
  std::map<int64_t, Json> grids;       // validation/grids.jsonl by completed iterations
  std::map<int64_t, Json> samples;     // exploration/samples.jsonl by iteration
  std::optional<std::string> config;
  std::vector<std::string> problems;  // what could not be read
};

// Objects of a JSONL file keyed by `key`; a later line for the same key replaces an earlier one
// (a resumed run rewrites what it redid). Bad lines are counted in `problems`.
std::map<int64_t, Json> read_jsonl(const fs::path& dir, const char* name, const char* key,
                                   std::vector<std::string>& problems) {
  std::map<int64_t, Json> out;
  const auto text = read_file(dir / name);
  if (!text) return out;
  std::istringstream in(*text);
  int bad = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    try {
      Json j = Json::parse(line);
      const auto k = j.at(key).get<int64_t>();
      out[k] = std::move(j);
    } catch (const Json::exception&) {
      ++bad;
    }
  }
  if (bad > 0) {
    problems.push_back(std::to_string(bad) + " unreadable line(s) in " + name);
  }
  return out;
}

Inputs read_inputs(const fs::path& dir) {
  Inputs in;
  in.dir = dir;
  if (const auto text = read_file(dir / "summary.json")) {
    try {
      in.summary = Json::parse(*text);
    } catch (const Json::exception&) {
      in.problems.push_back("summary.json is not JSON");
    }
  }
  in.iterations = read_jsonl(dir, "metrics.jsonl", "iteration", in.problems);
  // Deferred validation (validation.defer): the scores of validation point `version` (iterations
  // completed) come later from `spotlight-trainer validate`, into validation.jsonl.
  for (auto& [version, line] : read_jsonl(dir, "validation.jsonl", "version", in.problems)) {
    if (!line.contains("validation") || !line["validation"].is_object()) continue;
    Json& entry = in.iterations[version - 1];
    if (!entry.is_object()) entry = Json{{"iteration", version - 1}};
    if (!entry.contains("validation")) entry["validation"] = line["validation"];
  }
  in.cost = read_jsonl(dir, "cost.jsonl", "iteration", in.problems);
  in.grids = read_jsonl(dir, "validation/grids.jsonl", "iteration", in.problems);
  in.samples = read_jsonl(dir, "exploration/samples.jsonl", "iteration", in.problems);
  in.config = read_file(dir / "config.yaml");
  return in;
}

double number(const Json& j, const char* key, double otherwise = NAN) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : otherwise;
}

std::string str(const Json& j, const char* key, std::string otherwise = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string mode_of(const Inputs& in) {
  return in.summary ? str(*in.summary, "mode", "?") : "?";
}

Section overview(const Inputs& in) {
  Section s{"overview", "Overview", {}};
  const int64_t done =
      in.iterations.empty() ? 0 : std::max<int64_t>(0, in.iterations.rbegin()->first + 1);
  std::ostringstream text;
  // First and last validation score: from the summary, else (unfinished or deferred) the metrics.
  double first = NAN, last = NAN;
  for (const auto& [iteration, j] : in.iterations) {
    if (!j.contains("validation")) continue;
    if (std::isnan(first)) first = number(j["validation"], "geneval_score");
    last = number(j["validation"], "geneval_score");
  }
  if (in.summary) {
    const Json& sm = *in.summary;
    text << "exploration.mode " << str(sm, "mode", "?") << ", run seed "
         << report::format_number(number(sm, "seed")) << ": " << done << " of "
         << report::format_number(number(sm, "iterations")) << " iterations trained in "
         << fixed(number(sm, "train_wall_seconds"), 1)
         << " s of training wall time (validation excluded). Validation GenEval-like score "
         << fixed(number(sm, "base_geneval_score", first), 3) << " (base) -> "
         << fixed(number(sm, "final_geneval_score", last), 3) << ".";
  } else {
    text << "No summary.json: the run has not finished (or was interrupted). " << done
         << " iterations recorded in metrics.jsonl.";
  }
  s.blocks.push_back(Paragraph{text.str()});
  Table t{{"what", "value"}, {}};
  if (in.summary) {
    const Json& sm = *in.summary;
    for (const char* key :
         {"base_geneval_score", "final_geneval_score", "final_mean_reward",
          "mean_iteration_seconds", "mean_explore_seconds_on_critical_path", "fallback_prompts"}) {
      if (sm.contains(key)) t.rows.push_back({key, report::format_number(number(sm, key))});
    }
  }
  t.rows.push_back({"validation grids", std::to_string(in.grids.size())});
  t.rows.push_back({"exploration samples", std::to_string(in.samples.size())});
  s.blocks.push_back(t);
  for (const auto& problem : in.problems)
    s.blocks.push_back(Paragraph{"Skipped: " + problem + "."});
  return s;
}

Section scores(const Inputs& in) {
  Section s{"scores", "Scores", {}};
  Series val_iter{"validation GenEval-like score", {}}, val_reward{"validation mean reward", {}};
  Series rollout{"rollout reward (mean)", {}};
  Series val_wall{"validation GenEval-like score", {}}, reward_wall{"validation mean reward", {}};
  for (const auto& [iteration, j] : in.iterations) {
    const double x = static_cast<double>(iteration + 1);  // iterations completed
    const double wall = iteration < 0 ? 0.0 : number(j, "wall_seconds");
    if (iteration >= 0) rollout.points.emplace_back(x, number(j, "reward_mean"));
    if (const auto v = j.find("validation"); v != j.end() && v->is_object()) {
      val_iter.points.emplace_back(x, number(*v, "geneval_score"));
      val_reward.points.emplace_back(x, number(*v, "mean_reward"));
      val_wall.points.emplace_back(wall, number(*v, "geneval_score"));
      reward_wall.points.emplace_back(wall, number(*v, "mean_reward"));
    }
  }
  if (in.iterations.empty()) {
    s.blocks.push_back(Paragraph{"No metrics.jsonl in the run directory."});
    return s;
  }
  s.blocks.push_back(LineChart{"Scores against iterations",
                               "iterations completed",
                               "score",
                               {val_iter, val_reward, rollout}});
  s.blocks.push_back(LineChart{"Validation against training wall time",
                               "training wall time (s, validation excluded)",
                               "score",
                               {val_wall, reward_wall}});
  // Per category: the first validation against the last.
  const Json* first = nullptr;
  const Json* last = nullptr;
  for (const auto& [iteration, j] : in.iterations) {
    if (!j.contains("validation")) continue;
    if (!first) first = &j["validation"];
    last = &j["validation"];
  }
  if (first && last && first->contains("per_category")) {
    Table t{{"category", "first validation", "last validation"}, {}};
    for (const auto& [category, score] : (*first)["per_category"].items()) {
      const double after =
          last->contains("per_category") ? number((*last)["per_category"], category.c_str()) : NAN;
      t.rows.push_back(
          {category, fixed(score.is_number() ? score.get<double>() : NAN, 3), fixed(after, 3)});
    }
    s.blocks.push_back(Paragraph{"Strict accuracy per category on the validation prompts:"});
    s.blocks.push_back(t);
  }
  return s;
}

Section time_split(const Inputs& in) {
  Section s{"time", "Time per phase", {}};
  const bool async = mode_of(in) == "async";
  const std::vector<std::pair<const char*, std::string>> phases = {
      {"explore_seconds", async ? "waiting for explored seeds" : "exploration"},
      {"rollout_seconds", "rollout"},
      {"reward_seconds", "reward"},
      {"train_seconds", "train"}};
  report::StackedBars bars{"Seconds per iteration", "iteration", "seconds", {}, {}};
  std::vector<report::Stack> stacks;
  for (const auto& [key, name] : phases)
    stacks.push_back({name, {}});
  report::Stack other{"other", {}}, audit{"staleness audit", {}}, validation{"validation", {}};
  std::vector<double> totals(phases.size() + 3, 0.0);
  for (const auto& [iteration, j] : in.iterations) {
    if (iteration < 0) continue;
    bars.categories.push_back(std::to_string(iteration + 1));
    double sum = 0;
    for (std::size_t p = 0; p < phases.size(); ++p) {
      const double v = number(j, phases[p].first, 0.0);
      stacks[p].values.push_back(v);
      totals[p] += v;
      sum += v;
    }
    const double rest = std::max(0.0, number(j, "iteration_seconds", sum) - sum);
    const double a = number(j, "audit_seconds", 0.0);
    const double v = j.contains("validation") ? number(j["validation"], "seconds", 0.0) : 0.0;
    other.values.push_back(rest);
    audit.values.push_back(a);
    validation.values.push_back(v);
    totals[phases.size()] += rest;
    totals[phases.size() + 1] += a;
    totals[phases.size() + 2] += v;
  }
  if (bars.categories.empty()) {
    s.blocks.push_back(Paragraph{"No iterations recorded yet."});
    return s;
  }
  stacks.push_back(other);
  stacks.push_back(audit);
  stacks.push_back(validation);
  bars.stacks = stacks;
  s.blocks.push_back(bars);
  double all = 0;
  for (double t : totals)
    all += t;
  Table t{{"phase", "seconds", "share"}, {}};
  for (std::size_t p = 0; p < stacks.size(); ++p) {
    t.rows.push_back({stacks[p].name, fixed(totals[p], 1),
                      all > 0 ? fixed(100.0 * totals[p] / all, 1) + " %" : "-"});
  }
  s.blocks.push_back(Paragraph{
      "The trainer's wall time per iteration by phase. \"other\" is the rest of the iteration "
      "(checkpoint, optimizer bookkeeping); the staleness audit and validation are measurements "
      "outside the training time."});
  s.blocks.push_back(t);
  return s;
}

Section cost(const Inputs& in) {
  Section s{"cost", "Cost", {}};
  Series total{"total", {}}, reserved{"reserved (trainer)", {}}, spot{"spot (explorers)", {}};
  for (const auto& [iteration, j] : in.cost) {
    const double x = static_cast<double>(iteration + 1);
    total.points.emplace_back(x, number(j, "cost"));
    reserved.points.emplace_back(x, number(j, "reserved_cost"));
    spot.points.emplace_back(x, number(j, "spot_cost"));
  }
  if (in.cost.empty()) {
    s.blocks.push_back(Paragraph{"No cost.jsonl in the run directory."});
  } else {
    s.blocks.push_back(LineChart{"Cost so far",
                                 "iterations completed",
                                 "cost (cost.reserved_price_per_hour units)",
                                 {total, reserved, spot}});
  }
  if (in.summary && in.summary->contains("cost")) {
    Table t{{"what", "value"}, {}};
    for (const auto& [key, value] : (*in.summary)["cost"].items()) {
      t.rows.push_back(
          {key, value.is_number() ? report::format_number(value.get<double>()) : value.dump()});
    }
    s.blocks.push_back(t);
  }
  return s;
}

Section queue(const Inputs& in) {
  Section s{"queue", "Queue accounting", {}};
  if (!in.summary || !in.summary->contains("queue")) {
    s.blocks.push_back(Paragraph{"No lease queue in this run (exploration.mode " + mode_of(in) +
                                 "): seed tasks go through Redis only in async runs."});
    return s;
  }
  s.blocks.push_back(Paragraph{
      "The seed-task queue at the end of the run: every task enqueued is acknowledged once; "
      "reclaimed leases were re-delivered after their explorer stopped; a duplicate result is a "
      "task that ran twice and was recorded once."});
  Table t{{"counter", "value"}, {}};
  for (const auto& [key, value] : (*in.summary)["queue"].items()) {
    t.rows.push_back(
        {key, value.is_number() ? report::format_number(value.get<double>()) : value.dump()});
  }
  s.blocks.push_back(t);
  return s;
}

Section staleness(const Inputs& in) {
  Section s{"staleness", "Staleness audit", {}};
  Series tau{"Kendall tau (stale vs fresh rewards)", {}};
  Table t{{"iteration", "Kendall tau"}, {}};
  for (const auto& [iteration, j] : in.iterations) {
    const double v = number(j, "kendall_tau");
    if (!std::isfinite(v)) continue;
    tau.points.emplace_back(static_cast<double>(iteration + 1), v);
    t.rows.push_back({std::to_string(iteration + 1), fixed(v, 3)});
  }
  if (tau.points.empty()) {
    s.blocks.push_back(
        Paragraph{"No staleness audit in this run (audit.every 0, or too few "
                  "iterations)."});
    return s;
  }
  s.blocks.push_back(Paragraph{
      "Every audit.every iterations the trainer re-scores explored seeds of a few prompts with "
      "its current weights; tau is the mean rank correlation between the rewards the seeds had "
      "when explored and now (1: selection would choose the same seeds)."});
  s.blocks.push_back(LineChart{"Staleness audit", "iteration", "Kendall tau", {tau}});
  s.blocks.push_back(t);
  return s;
}

std::optional<Figure> grid_figure(const Inputs& in, const fs::path& folder, const Json& j,
                                  const std::string& caption) {
  const std::string file = str(j, "file");
  if (file.empty() || file.find('/') != std::string::npos) return std::nullopt;
  const auto png = read_file(in.dir / folder / file);
  if (!png) return std::nullopt;
  return Figure{*png, caption};
}

std::string grid_caption(int64_t iteration, const Json& j) {
  return (iteration == 0 ? std::string("iteration 0 (base model)")
                         : "after iteration " + std::to_string(iteration)) +
         ": GenEval-like " + fixed(number(j, "geneval_score"), 3) + ", mean reward " +
         fixed(number(j, "mean_reward"), 3);
}

double mean_of(const Json& values) {
  if (!values.is_array() || values.empty()) return NAN;
  double sum = 0;
  for (const auto& v : values)
    sum += v.is_number() ? v.get<double>() : (v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : NAN);
  return sum / static_cast<double>(values.size());
}

Section grids(const Inputs& in) {
  Section s{"grids", "Validation images", {}};
  if (in.grids.empty()) {
    s.blocks.push_back(
        Paragraph{"No validation grids (validation.grid_prompts 0, or none written "
                  "yet)."});
    return s;
  }
  const auto& [first_iteration, first] = *in.grids.begin();
  const auto& [last_iteration, last] = *in.grids.rbegin();
  s.blocks.push_back(Paragraph{
      "The first validation prompts, each drawn with the same fixed seeds by the ODE sampler at "
      "every validation, captioned with each image's reward (\"ok\", green frame: strictly "
      "correct). The first grid against the last:"});
  Figures side_by_side;
  side_by_side.side_by_side = true;
  if (auto f = grid_figure(in, "validation", first, grid_caption(first_iteration, first))) {
    side_by_side.figures.push_back(*f);
  }
  if (last_iteration != first_iteration) {
    if (auto f = grid_figure(in, "validation", last, grid_caption(last_iteration, last))) {
      side_by_side.figures.push_back(*f);
    }
  }
  if (!side_by_side.figures.empty()) s.blocks.push_back(side_by_side);
  if (first.contains("prompts") && last.contains("prompts") && first["prompts"].is_array() &&
      last["prompts"].is_array()) {
    Table t{{"prompt", "mean reward first", "mean reward last", "correct first", "correct last"},
            {}};
    const auto& a = first["prompts"];
    const auto& b = last["prompts"];
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!a[i].is_object() || !b[i].is_object()) continue;
      t.rows.push_back({str(a[i], "prompt"), fixed(mean_of(a[i].value("rewards", Json())), 2),
                        fixed(mean_of(b[i].value("rewards", Json())), 2),
                        fixed(mean_of(a[i].value("correct", Json())), 2),
                        fixed(mean_of(b[i].value("correct", Json())), 2)});
    }
    s.blocks.push_back(t);
  }
  // The grids in between (the first and the last are shown above already).
  Figures between{{},
                  "the " + std::to_string(in.grids.size() >= 2 ? in.grids.size() - 2 : 0) +
                      " grids in between"};
  double grid_seconds = 0, validation_seconds = 0;
  for (const auto& [iteration, j] : in.grids) {
    grid_seconds += number(j, "sample_seconds", 0.0) + number(j, "draw_seconds", 0.0);
    validation_seconds += number(j, "validation_seconds", 0.0);
    if (iteration == first_iteration || iteration == last_iteration) continue;
    if (auto f = grid_figure(in, "validation", j, grid_caption(iteration, j))) {
      between.figures.push_back(*f);
    }
  }
  if (!between.figures.empty()) s.blocks.push_back(between);
  if (validation_seconds > 0) {
    s.blocks.push_back(
        Paragraph{"Drawing the grids (extra seeds sampled and scored, PNG written) took " +
                  fixed(grid_seconds, 2) + " s in all, " +
                  fixed(100.0 * grid_seconds / validation_seconds, 1) + " % of the " +
                  fixed(validation_seconds, 1) + " s spent validating."});
  }
  return s;
}

Section exploration(const Inputs& in) {
  Section s{"exploration", "What seed selection chose", {}};
  if (in.samples.empty()) {
    s.blocks.push_back(
        Paragraph{"No exploration samples: explorers keep candidate images only in async runs with "
                  "exploration.sample_images_every > 0."});
    return s;
  }
  s.blocks.push_back(Paragraph{
      "For prompt 0 of every exploration.sample_images_every-th iteration: every explored "
      "candidate as the explorer drew it (weights one version behind), in ascending reward order, "
      "captioned with its explored reward; the seeds selection kept for training (maximum reward "
      "variance) are framed and marked \"kept\"."});
  Figures recent;
  std::size_t shown = 0;
  for (auto it = in.samples.rbegin(); it != in.samples.rend() && shown < kShownExplorationSamples;
       ++it, ++shown) {
    const std::string caption = "iteration " + std::to_string(it->first) + ": \"" +
                                str(it->second, "prompt") + "\", kept variance " +
                                fixed(number(it->second, "kept_variance"), 3) + " vs " +
                                fixed(number(it->second, "all_variance"), 3) + " of all";
    if (auto f = grid_figure(in, "exploration", it->second, caption)) recent.figures.push_back(*f);
  }
  s.blocks.push_back(recent);
  Table t{{"iteration", "prompt", "candidates", "kept variance", "all variance"}, {}};
  for (const auto& [iteration, j] : in.samples) {
    t.rows.push_back({std::to_string(iteration), str(j, "prompt"),
                      std::to_string(j.value("candidates", Json::array()).size()),
                      fixed(number(j, "kept_variance"), 3), fixed(number(j, "all_variance"), 3)});
  }
  s.blocks.push_back(t);
  return s;
}

Section config(const Inputs& in) {
  Section s{"config", "Configuration", {}};
  if (in.config) {
    s.blocks.push_back(
        report::Preformatted{*in.config, "config.yaml (the effective configuration)"});
  } else {
    s.blocks.push_back(Paragraph{"No config.yaml in the run directory."});
  }
  return s;
}

}  // namespace

report::Page run_report(const fs::path& run_dir) {
  if (!fs::is_directory(run_dir)) {
    throw std::invalid_argument("report: '" + run_dir.string() + "' is not a directory");
  }
  const Inputs in = read_inputs(run_dir);
  report::Page page;
  fs::path absolute = fs::absolute(run_dir).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  page.title = "Spotlight run " + absolute.filename().string();
  page.subtitle = absolute.string();
  page.sections = {overview(in),  scores(in), time_split(in),  cost(in),  queue(in),
                   staleness(in), grids(in),  exploration(in), config(in)};
  return page;
}

fs::path write_run_report(const fs::path& run_dir, const fs::path& out) {
  const fs::path path = out.empty() ? run_dir / "report.html" : out;
  report::write_html(path, run_report(run_dir));
  return path;
}

}  // namespace spotlight::trainer
