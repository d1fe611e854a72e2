#include "tools/simulator/commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config/arguments.hpp"
#include "common/config/error.hpp"
#include "common/report/html.hpp"
#include "common/report/page_json.hpp"
#include "tools/simulator/calibration.hpp"
#include "tools/simulator/calibrations.hpp"
#include "tools/simulator/measured_step_time.hpp"
#include "tools/simulator/study.hpp"

namespace spotlight::simulator {
namespace {

std::string format(const char* spec, double x) {
  if (!std::isfinite(x)) return "not reached";
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, x);
  return buf;
}

using config::ArgumentParser;
using config::ConfigError;

template <typename T>
std::vector<T> parse_list(const std::string& name, const std::string& text) {
  std::vector<T> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      std::size_t used = item.size();
      if constexpr (std::is_same_v<T, double>) {
        out.push_back(std::stod(item, &used));
      } else if constexpr (std::is_same_v<T, int>) {
        out.push_back(std::stoi(item, &used));
      } else {
        out.push_back(item);
      }
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      std::string what = "option --";
      what.append(name).append(": cannot read '").append(item).append("'");
      throw ConfigError("", what);
    }
  }
  if (out.empty()) throw ConfigError("", "option --" + name + " is empty");
  return out;
}

int integer(const config::Arguments& a, const std::string& name) {
  return static_cast<int>(a.integer(name));
}

void print_checks(const std::vector<ConfigCheck>& checks) {
  std::printf("%-26s %5s %16s %18s %14s %10s %8s\n", "configuration", "runs", "measured median",
              "measured 95% CI", "simulated", "reached", "within");
  for (const auto& c : checks) {
    std::printf("%-26s %5d %16s %8s..%-8s %14s %9.0f%% %8s   curve rmse %.4f\n", c.label.c_str(),
                c.measured_runs, format("%.0f", c.measured_median).c_str(),
                format("%.0f", c.ci_low).c_str(), format("%.0f", c.ci_high).c_str(),
                format("%.0f", c.simulated_median).c_str(), 100 * c.simulated_reached,
                c.within ? "yes" : (c.checked ? "NO" : "no*"), c.curve_rmse);
  }
  std::printf("no*: outside, but fewer than %d measured runs: shown, not checked\n",
              kMinRunsToCheck);
  // The selection effect: progress at the end of the run, and its ratio to plain GRPO's.
  const auto none = std::find_if(checks.begin(), checks.end(),
                                 [](const ConfigCheck& c) { return c.label == "none"; });
  std::printf("\n%-26s %22s %10s %8s %16s %16s\n", "configuration", "end progress measured",
              "simulated", "within", "vs none measured", "vs none simulated");
  for (const auto& c : checks) {
    std::string measured_ratio = "", simulated_ratio = "";
    if (none != checks.end() && none->measured_progress > 0 && none->simulated_progress > 0) {
      measured_ratio = format("%.2fx", c.measured_progress / none->measured_progress);
      simulated_ratio = format("%.2fx", c.simulated_progress / none->simulated_progress);
    }
    std::printf("%-26s %12.4f +- %6.4f %10.4f %8s %16s %16s\n", c.label.c_str(),
                c.measured_progress, c.measured_progress_se, c.simulated_progress,
                c.progress_within ? "yes" : (c.checked ? "NO" : "no*"), measured_ratio.c_str(),
                simulated_ratio.c_str());
  }
  std::printf(
      "end progress: mean of the last validations minus the base; +- one standard error "
      "over runs; within: 2 standard errors\n");
}

void print_gains(const std::vector<GainCheck>& gains, const std::vector<std::string>& fitted) {
  std::printf("\n%-26s %14s %18s %14s %10s %s\n", "gain of selection", "measured", "95% interval",
              "simulated", "verdict", "");
  for (const auto& g : gains) {
    const bool held_out =
        !fitted.empty() && std::find(fitted.begin(), fitted.end(), g.label) == fitted.end();
    std::printf("%-26s %13.2fx %8sx..%-8s %13.2fx %10s %s\n", g.label.c_str(), g.measured_gain,
                format("%.2f", g.ci_low).c_str(), format("%.2f", g.ci_high).c_str(),
                g.simulated_gain,
                g.within() ? "within" : (g.too_little ? "TOO LITTLE" : "TOO MUCH"),
                held_out ? "(held out)" : "");
  }
  std::printf(
      "gain: end progress over plain GRPO's; interval: paired bootstrap over seeds ('not "
      "reached': open)\n");
}

nlohmann::json gains_json(const std::vector<GainCheck>& gains) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : gains) {
    out.push_back(
        {{"label", g.label},
         {"measured_gain", g.measured_gain},
         {"ci", nlohmann::json::array(
                    {std::isfinite(g.ci_low) ? nlohmann::json(g.ci_low) : nlohmann::json(),
                     std::isfinite(g.ci_high) ? nlohmann::json(g.ci_high) : nlohmann::json()})},
         {"simulated_gain", g.simulated_gain},
         {"within", g.within()},
         {"too_little", g.too_little},
         {"too_much", g.too_much}});
  }
  return out;
}

int fit_command(const std::vector<std::string>& words) {
  ArgumentParser parser(
      "usage: spotlight-sim fit --measured MEASURED.json --out FITTED.json [--law contrast "
      "--categories C --fit-configs LABEL,...]");
  parser.option("measured", "MEASURED.json", "what scripts/sim-calibrate measured")
      .option("out", "FITTED.json", "where the fitted parameters go")
      .option("law", "cosine|contrast", "the learning model's update law", "cosine")
      .option("categories", "C", "prompt categories with a skill of their own (contrast)", "1")
      .option("fit-configs", "LABEL,...",
              "configurations the progress stage fits (default: all; the rest is held out)");
  const auto a = parser.parse(words);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  const Measured m = load_measured(a.text("measured"));
  FitOptions options;
  options.law = parse_law(a.text("law"));
  options.categories = integer(a, "categories");
  if (options.categories < 1) throw ConfigError("", "option --categories: must be >= 1");
  if (a.given("fit-configs")) {
    options.fit_labels = parse_list<std::string>("fit-configs", a.text("fit-configs"));
  }
  const FitReport r = fit(m, options);
  const auto& p = r.params;
  std::printf(
      "starting distribution: %d prompts x %.1f seeds, mean %.4f, between %.5f, within %.5f -> "
      "K %.2f (used %d), z0 %.3f, sigma_d %.3f, validation offset %.3f\n",
      r.starting.prompts, r.starting.candidates, r.starting.mean, r.starting.between,
      r.starting.within, r.starting.k_raw, p.reward_levels, p.z0, p.sigma_d, p.validation_offset);
  for (const auto& [k, v] : r.taus)
    std::printf("tau %-45s %.3f\n", k.c_str(), v);
  std::printf(
      "observation: stale_flip %.4f, steps_gamma %.3f; progress: eta %.5f, c %.4f, step noise "
      "w %.3f, validation noise %.4f; curve objective %.2f\n",
      p.stale_flip, p.steps_gamma, p.eta, p.noise, p.step_noise, p.validation_noise, r.objective);
  if (p.law == Law::kContrast) {
    std::printf("contrast law: C %d, local share lambda %.2f, selection efficiency %.3f\n",
                p.categories, p.local_share, p.selection_efficiency);
  }
  print_checks(r.checks);
  print_gains(check_gains(m, p, FitOptions{}.check_replays), r.fitted_labels);
  write_fitted(a.text("out"), r, a.text("measured"));
  std::fprintf(stderr, "wrote %s\n", a.text("out").c_str());
  return 0;
}

int check_command(const std::vector<std::string>& words) {
  ArgumentParser parser(
      "usage: spotlight-sim check --measured MEASURED.json --fitted FITTED.json [--replays N]\n"
      "Exit 1 when a checked configuration falls outside its measured interval, or (law\n"
      "contrast) a simulated gain of selection outside its measured interval.");
  parser.option("measured", "MEASURED.json", "what scripts/sim-calibrate measured")
      .option("fitted", "FITTED.json", "spotlight-sim fit's parameters")
      .option("replays", "N", "simulated runs per configuration", "400")
      .option("gains-json", "OUT.json", "also write the gain checks there");
  const auto a = parser.parse(words);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  const Measured m = load_measured(a.text("measured"));
  const LearningParams p = load_fitted(a.text("fitted"));
  const auto checks = check(m, p, integer(a, "replays"));
  print_checks(checks);
  std::vector<std::string> fitted_labels;
  {
    std::ifstream in(a.text("fitted"));
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("fitted_configurations") &&
        j.at("source").get<std::string>() == a.text("measured")) {
      fitted_labels = j.at("fitted_configurations").get<std::vector<std::string>>();
    }
  }
  const auto gains = check_gains(m, p, integer(a, "replays"));
  print_gains(gains, fitted_labels);
  if (a.given("gains-json")) {
    std::ofstream out(a.text("gains-json"));
    out << nlohmann::json{{"measured", a.text("measured")},
                          {"fitted", a.text("fitted")},
                          {"fitted_configurations", fitted_labels},
                          {"gains", gains_json(gains)}}
               .dump(1)
        << "\n";
  }
  if (p.law == Law::kContrast) {
    return std::all_of(gains.begin(), gains.end(), [](const auto& g) { return g.within(); }) ? 0
                                                                                             : 1;
  }
  const bool all = std::all_of(checks.begin(), checks.end(), [](const auto& c) {
    return !c.checked || (c.within && c.progress_within);
  });
  return all ? 0 : 1;
}

// The law's gain of selection in a benchmark's configuration it was not fitted on: another reward
// (K), other categories' starting rates, another N. Progress is the expected score's (no
// validation noise), at the end of the budget, over plain GRPO's.
int predict_command(const std::vector<std::string>& words) {
  ArgumentParser parser(
      "usage: spotlight-sim predict --fitted FITTED.json [--reward-levels K] [--category-rates "
      "R,...] [--candidates N,...]\n"
      "The fitted law's gain of sync and async over none (end progress, expected score) in an\n"
      "embedded benchmark's configuration, e.g. the strict reward (K = 1) at measured "
      "per-category\n"
      "base rates.");
  parser.option("fitted", "FITTED.json", "spotlight-sim fit's parameters (law contrast)")
      .option("reward-levels", "K", "1: right or wrong (strict); else partial credit")
      .option("category-rates", "R,R,...",
              "base success rate per category (sets C, the offsets and z0)")
      .option("prompts", "P", "prompts per iteration", "8")
      .option("group-size", "G", "samples trained per prompt", "4")
      .option("candidates", "N,N,...", "explored candidates per prompt", "16")
      .option("steps", "S", "sampler steps (explored = rolled out)", "8")
      .option("iterations", "I", "the budget", "30")
      .option("replays", "R", "simulated runs per configuration", "400");
  const auto a = parser.parse(words);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  LearningParams p = load_fitted(a.text("fitted"));
  if (a.given("reward-levels")) p.reward_levels = integer(a, "reward-levels");
  double base = LearningModel(p, 0).score();
  if (a.given("category-rates")) {
    const auto rates = parse_list<double>("category-rates", a.text("category-rates"));
    double mean_logit = 0;
    base = 0;
    for (const double r : rates) {
      if (!(r > 0 && r < 1)) throw ConfigError("", "option --category-rates: each in (0, 1)");
      mean_logit += std::log(r / (1 - r)) / static_cast<double>(rates.size());
      base += r / static_cast<double>(rates.size());
    }
    p.categories = static_cast<int>(rates.size());
    p.category_offsets.clear();
    for (const double r : rates)
      p.category_offsets.push_back(std::log(r / (1 - r)) - mean_logit);
    p.validation_offset = 0;
    double lo = -10, hi = 10;
    for (int i = 0; i < 60; ++i) {
      p.z0 = 0.5 * (lo + hi);
      (LearningModel(p, 0).score() < base ? lo : hi) = p.z0;
    }
  }
  ReplayOptions o;
  o.prompts = integer(a, "prompts");
  o.group_size = integer(a, "group-size");
  o.explore_steps = o.rollout_steps = integer(a, "steps");
  o.iterations = integer(a, "iterations");
  o.target = 2;  // never reached: progress only
  const int replays = integer(a, "replays");
  const auto progress = [&](const ReplayOptions& r) {
    const ReplaySummary s = replay_many(p, r, replays, 5000);
    return s.mean_expected.back() - s.mean_expected.front();
  };
  const double none = progress(o);
  std::printf("law %s, K %d, C %d, base %.4f, %d prompts x G %d, %d iterations: none %.4f\n",
              to_string(p.law), p.reward_levels, p.categories, base, o.prompts, o.group_size,
              o.iterations, none);
  for (const int n : parse_list<int>("candidates", a.text("candidates"))) {
    for (const Mode mode : {Mode::kSync, Mode::kAsync}) {
      ReplayOptions r = o;
      r.mode = mode;
      r.candidates = n;
      const double mine = progress(r);
      std::printf("%-6s N=%-4d progress %.4f  gain %.2f\n", to_string(mode), n, mine,
                  none > 0 ? mine / none : 0.0);
    }
  }
  return 0;
}

std::vector<Trace> load_traces(const std::vector<std::string>& given) {
  std::vector<std::string> paths = given;
  if (paths.empty()) {
    const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
    const std::filesystem::path dir = std::filesystem::path(src ? src : ".") / "deploy" / "traces";
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("availability_", 0) == 0)
        paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
  }
  std::vector<Trace> traces;
  traces.reserve(paths.size());
  for (const auto& p : paths)
    traces.push_back(Trace::load(p));
  if (traces.empty()) throw ConfigError("", "study: no trace");
  return traces;
}

int study_command(const std::vector<std::string>& words) {
  ArgumentParser parser(
      "usage: spotlight-sim study --fitted FITTED.json --out STUDY.jsonl [options] [TRACE.json "
      "...]\n"
      "The cluster study: every mode on every trace (default: deploy/traces/availability_*.json)\n"
      "and reserved:spot ratio, over trace offsets, as JSON lines for scripts/sim_report.py.");
  parser.option("fitted", "FITTED.json", "spotlight-sim fit's parameters")
      .option("out", "STUDY.jsonl", "where the study's JSON lines go")
      .option("hardware", "H100|H200", "per-step costs of this GPU (step_costs.hpp)", "H200")
      .option("gpu-results", "RESULTS.json",
              "t measured by scripts/gpu-check on that GPU (default: deploy/gpu/<hardware>.json "
              "when it exists)")
      .flag("estimate", "t from the estimate, even where deploy/gpu/ has a measurement")
      .option("reserved", "GPUS", "reserved GPUs of the trainer", "32")
      .option("offsets", "N", "trace offsets (paired runs) per configuration", "30")
      .option("ratios", "R,R,...", "spot GPUs per reserved GPU")
      .option("gains", "G,G,...", "selection gains swept as an input (iterations of none / async)")
      .option("startups", "S,S,...", "spot GPU start-up seconds swept")
      .option("step-seconds", "T", "t, one sample-step on one GPU, instead of the estimate")
      .option("async-wait-share", "X", "async's least wait, share of its compute (measured 0.25)")
      .option("async-audit-share", "X", "async's audit, share of its compute (measured 0.033)")
      .option("weight-publish-seconds", "S", "weights to the spot GPUs (assumed 5)")
      .option("dp-efficiency", "X", "none-matched's data-parallel efficiency per doubling")
      .option("offpolicy-efficiency", "X",
              "progress of one-version-old trajectories relative to fresh ones (assumed 1)")
      .option("calibrations", "NAME,...", "embedded and/or published", "embedded,published")
      .option("modes", "MODE,...", "modes to run (default: every mode)")
      .option("published-iterations", "N", "plain GRPO's iterations to the published target")
      .option("jobs", "N", "threads (the output is the same for any number)", "1");
  const auto a = parser.parse(words);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  StudyOptions s;
  StepTimeChoice step_time;
  if (a.given("gpu-results")) step_time.results = a.text("gpu-results");
  step_time.estimate = a.flag("estimate");
  if (step_time.results && step_time.estimate) {
    throw ConfigError("", "options --gpu-results and --estimate exclude each other");
  }
  const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
  step_time.source_dir = src ? src : ".";
  s.base.costs = step_costs_for(a.text("hardware"), step_time);
  std::fprintf(stderr, "t = %g s per sample-step on %s, %s\n", s.base.costs.seconds_per_sample_step,
               s.base.costs.hardware.c_str(),
               s.base.costs.measured ? s.base.costs.source.c_str() : "estimated (not measured)");
  const auto number = [&](const char* name) {
    const auto v = parse_list<double>(name, a.text(name));
    if (v.size() != 1 || !(v[0] >= 0)) {
      throw ConfigError("", std::string("option --") + name + ": one number >= 0");
    }
    return v[0];
  };
  if (a.given("step-seconds")) {
    s.base.costs = with_measured_step_time(s.base.costs, number("step-seconds"),
                                           "given on the command line (assumed)");
    s.base.costs.measured = false;
  }
  if (a.given("async-wait-share")) s.base.costs.async_wait_share = number("async-wait-share");
  if (a.given("async-audit-share")) s.base.costs.async_audit_share = number("async-audit-share");
  if (a.given("weight-publish-seconds")) {
    s.base.costs.weight_publish_seconds = number("weight-publish-seconds");
  }
  if (a.given("dp-efficiency")) s.base.costs.dp_efficiency_per_doubling = number("dp-efficiency");
  if (a.given("startups")) s.startups = parse_list<double>("startups", a.text("startups"));
  s.base.reserved_gpus = integer(a, "reserved");
  s.base.prompts = 48;
  s.base.group_size = 24;
  s.base.rollout_steps = 10;
  s.base.trained_steps = 9;
  s.base.sync_steps = 10;
  s.base.bandit.steps = {5, 10};
  s.offsets = integer(a, "offsets");
  s.jobs = integer(a, "jobs");
  if (s.jobs < 1) throw ConfigError("", "option --jobs: must be >= 1");
  if (a.given("ratios")) s.ratios = parse_list<double>("ratios", a.text("ratios"));
  if (a.given("gains")) s.gains = parse_list<double>("gains", a.text("gains"));
  if (a.given("modes")) {
    s.modes = parse_list<std::string>("modes", a.text("modes"));
    for (const auto& m : s.modes)
      parse_mode(m);
  }
  if (s.base.reserved_gpus < 1) throw ConfigError("", "option --reserved: must be >= 1");
  if (s.offsets < 1) throw ConfigError("", "option --offsets: must be >= 1");
  s.traces = load_traces(a.positional());

  const std::string fitted_path = a.text("fitted");
  const LearningParams fitted = load_fitted(fitted_path);
  double embedded_target = 0;
  {
    std::ifstream in(fitted_path);
    const auto j = nlohmann::json::parse(in);
    embedded_target = j.at("target").get<double>();
  }
  const EmbeddedShape shape;
  PublishedTarget published;
  if (a.given("published-iterations")) published.iterations = integer(a, "published-iterations");
  LearningParams learned = fitted;
  if (a.given("offpolicy-efficiency"))
    learned.offpolicy_efficiency = number("offpolicy-efficiency");
  for (const auto& name : parse_list<std::string>("calibrations", a.text("calibrations"))) {
    if (name == "embedded") {
      s.calibrations.push_back(embedded_calibration(learned, shape, s.base, embedded_target));
    } else if (name == "published") {
      s.calibrations.push_back(published_calibration(learned, shape, s.base, published));
    } else {
      throw ConfigError("", "option --calibrations: embedded or published, not " + name);
    }
    std::fprintf(stderr, "calibration %s: %s\n", name.c_str(), s.calibrations.back().about.c_str());
  }
  const std::string out_path = a.text("out");
  std::ofstream out(out_path);
  if (!out) throw std::runtime_error("study: cannot write " + out_path);
  // What the model predicts for DanceGRPO's best-of-N pools: it trained on the top 8 and bottom 8
  // rewards (G = 16) of 16, 64 and 256 images per prompt.
  for (const auto& c : s.calibrations) {
    ClusterOptions bo = s.base;
    bo.group_size = 16;
    nlohmann::json line{{"best_of_n", c.name}, {"group_size", bo.group_size}};
    for (const auto& b : best_of_n(c, bo, {16, 64, 256}, 3)) {
      line["pools"].push_back(
          {{"candidates", b.candidates}, {"iterations", b.iterations}, {"gain", b.gain}});
    }
    out << line.dump() << "\n";
  }
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : published_figures()) {
    figures.push_back({{"what", f.what},
                       {"value", f.value},
                       {"source", f.source},
                       {"certain", f.certain},
                       {"note", f.note}});
  }
  out << nlohmann::json{{"published_figures", figures}}.dump() << "\n";
  run_study(s, out, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  std::fprintf(stderr, "wrote %s\n", out_path.c_str());
  return 0;
}

int page_command(const std::vector<std::string>& words) {
  ArgumentParser parser(
      "usage: spotlight-sim page PAGE.json OUT.html\n"
      "A report page described as JSON (common/report/page_json.hpp) as one self-contained HTML\n"
      "file (scripts/sim_report.py writes the study's).");
  const auto a = parser.parse(words);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  if (a.positional().size() != 2) throw ConfigError("", "page: PAGE.json and OUT.html");
  const std::filesystem::path page_file(a.positional()[0]);
  std::ifstream in(page_file, std::ios::binary);
  if (!in) throw std::runtime_error("page: cannot read " + page_file.string());
  std::ostringstream json;
  json << in.rdbuf();
  const auto page = report::page_from_json(json.str(), page_file.parent_path());
  const auto bytes = report::write_html(a.positional()[1], page);
  std::fprintf(stderr, "wrote %s (%zu bytes)\n", a.positional()[1].c_str(), bytes);
  return 0;
}

constexpr const char* kUsage =
    "usage: spotlight-sim COMMAND [options]   (spotlight-sim COMMAND --help: its options)\n"
    "  fit    fit the learning model to what scripts/sim-calibrate measured\n"
    "  check  replay every measured configuration with the fitted parameters\n"
    "  predict  the fitted law's gain of selection in another configuration\n"
    "  study  the cluster study over traces, ratios and modes (JSON lines)\n"
    "  page   a report page's JSON as one self-contained HTML file\n";

}  // namespace

int run_command_line(int argc, const char* const* argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  const std::vector<std::string> words(argv + std::min(argc, 2), argv + argc);
  if (command == "fit") return fit_command(words);
  if (command == "check") return check_command(words);
  if (command == "predict") return predict_command(words);
  if (command == "study") return study_command(words);
  if (command == "page") return page_command(words);
  throw ConfigError("", command.empty() ? "no command (fit, check, predict, study or page)"
                                        : "unknown command '" + command +
                                              "' (fit, check, predict, study or page)");
}

}  // namespace spotlight::simulator
