#include "tools/simulator/commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/simulator/calibration.hpp"
#include "tools/simulator/calibrations.hpp"
#include "tools/simulator/study.hpp"

namespace spotlight::simulator {

const char* const kUsage =
    "usage: spotlight-sim fit --measured MEASURED.json --out FITTED.json\n"
    "       spotlight-sim check --measured MEASURED.json --fitted FITTED.json [--replays N]\n"
    "       spotlight-sim study --fitted FITTED.json --out STUDY.jsonl [--hardware H100|H200]\n"
    "             [--reserved R] [--offsets N] [--ratios 0.5,1,2,4] [--gains 1,2,4]\n"
    "             [--calibrations embedded,published] [--modes none,sync,...] [--published-"
    "iterations N] [TRACE.json ...]\n";

namespace {

std::string format(const char* spec, double x) {
  if (!std::isfinite(x)) return "not reached";
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, x);
  return buf;
}

const std::string& required(const Arguments& a, const std::string& name) {
  const auto it = a.options.find(name);
  if (it == a.options.end()) throw UsageError(a.command + ": --" + name + " is required");
  return it->second;
}

std::string optional(const Arguments& a, const std::string& name, const std::string& fallback) {
  const auto it = a.options.find(name);
  return it == a.options.end() ? fallback : it->second;
}

void allow(const Arguments& a, std::set<std::string> names) {
  for (const auto& [k, v] : a.options) {
    if (!names.count(k)) throw UsageError(a.command + ": unknown option --" + k);
  }
}

template <typename T>
std::vector<T> parse_list(const std::string& name, const std::string& text) {
  std::vector<T> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      if constexpr (std::is_same_v<T, double>) {
        out.push_back(std::stod(item));
      } else if constexpr (std::is_same_v<T, int>) {
        out.push_back(std::stoi(item));
      } else {
        out.push_back(item);
      }
    } catch (const std::exception&) {
      throw UsageError("--" + name + ": cannot read '" + item + "'");
    }
  }
  if (out.empty()) throw UsageError("--" + name + " is empty");
  return out;
}

int number(const Arguments& a, const std::string& name, int fallback) {
  const std::string text = optional(a, name, std::to_string(fallback));
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    throw UsageError("--" + name + ": not an integer: " + text);
  }
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
}

int fit_command(const Arguments& a) {
  allow(a, {"measured", "out"});
  const Measured m = load_measured(required(a, "measured"));
  const FitReport r = fit(m);
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
  print_checks(r.checks);
  write_fitted(required(a, "out"), r, required(a, "measured"));
  std::fprintf(stderr, "wrote %s\n", required(a, "out").c_str());
  return 0;
}

int check_command(const Arguments& a) {
  allow(a, {"measured", "fitted", "replays"});
  const Measured m = load_measured(required(a, "measured"));
  const LearningParams p = load_fitted(required(a, "fitted"));
  const auto checks = check(m, p, number(a, "replays", 400));
  print_checks(checks);
  const bool all = std::all_of(checks.begin(), checks.end(),
                               [](const auto& c) { return c.within || !c.checked; });
  return all ? 0 : 1;
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
  for (const auto& p : paths)
    traces.push_back(Trace::load(p));
  if (traces.empty()) throw UsageError("study: no trace");
  return traces;
}

int study_command(const Arguments& a) {
  allow(a, {"fitted", "out", "hardware", "reserved", "offsets", "ratios", "gains", "calibrations",
            "modes", "published-iterations"});
  StudyOptions s;
  s.base.costs = estimated_step_costs(optional(a, "hardware", "H200"));
  s.base.reserved_gpus = number(a, "reserved", 32);
  s.base.prompts = 48;
  s.base.group_size = 24;
  s.base.rollout_steps = 10;
  s.base.trained_steps = 9;
  s.base.sync_steps = 10;
  s.base.bandit.steps = {5, 10};
  s.offsets = number(a, "offsets", 30);
  if (a.options.count("ratios")) s.ratios = parse_list<double>("ratios", a.options.at("ratios"));
  if (a.options.count("gains")) s.gains = parse_list<double>("gains", a.options.at("gains"));
  if (a.options.count("modes")) {
    s.modes = parse_list<std::string>("modes", a.options.at("modes"));
    for (const auto& m : s.modes)
      parse_mode(m);
  }
  if (s.base.reserved_gpus < 1 || s.offsets < 1) throw UsageError("study: --reserved, --offsets");
  s.traces = load_traces(a.positional);

  const std::string fitted_path = required(a, "fitted");
  const LearningParams fitted = load_fitted(fitted_path);
  double embedded_target = 0;
  {
    std::ifstream in(fitted_path);
    const auto j = nlohmann::json::parse(in);
    embedded_target = j.at("target").get<double>();
  }
  const EmbeddedShape shape;
  PublishedTarget published;
  published.iterations = number(a, "published-iterations", published.iterations);
  for (const auto& name :
       parse_list<std::string>("calibrations", optional(a, "calibrations", "embedded,published"))) {
    if (name == "embedded") {
      s.calibrations.push_back(embedded_calibration(fitted, shape, s.base, embedded_target));
    } else if (name == "published") {
      s.calibrations.push_back(published_calibration(fitted, shape, s.base, published));
    } else {
      throw UsageError("--calibrations: embedded or published, not " + name);
    }
    std::fprintf(stderr, "calibration %s: %s\n", name.c_str(), s.calibrations.back().about.c_str());
  }
  std::ofstream out(required(a, "out"));
  if (!out) throw std::runtime_error("study: cannot write " + required(a, "out"));
  // What the model predicts for DanceGRPO's best-of-N pools (G = 8: an assumed top-4 + bottom-4).
  for (const auto& c : s.calibrations) {
    ClusterOptions bo = s.base;
    bo.group_size = 8;
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
  std::fprintf(stderr, "wrote %s\n", required(a, "out").c_str());
  return 0;
}

}  // namespace

Arguments parse_arguments(int argc, const char* const* argv) {
  Arguments a;
  if (argc < 2) throw UsageError("no command");
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("--", 0) == 0) {
      if (i + 1 >= argc) throw UsageError(word + " needs a value");
      a.options[word.substr(2)] = argv[++i];
    } else if (!word.empty() && word[0] == '-') {
      throw UsageError("unknown option " + word);
    } else {
      a.positional.push_back(word);
    }
  }
  return a;
}

int run_command(const Arguments& a) {
  if (a.command == "fit") return fit_command(a);
  if (a.command == "check") return check_command(a);
  if (a.command == "study") return study_command(a);
  throw UsageError("unknown command " + a.command);
}

}  // namespace spotlight::simulator
