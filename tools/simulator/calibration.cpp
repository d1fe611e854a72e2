#include "tools/simulator/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "common/rl/kendall.hpp"

namespace spotlight::simulator {
namespace {

using Json = nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

Json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw CalibrationError(path.string() + ": cannot read the file");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    throw CalibrationError(path.string() + ": not JSON: " + e.what());
  }
}

// A field of `parent`, or a CalibrationError naming `where`.
const Json& field(const Json& parent, const char* name, const std::string& where) {
  if (!parent.is_object() || !parent.contains(name)) {
    throw CalibrationError(where + ": no field '" + name + "'");
  }
  return parent.at(name);
}

double number_or_inf(const Json& v) {
  return v.is_null() ? kInf : v.get<double>();
}

Json inf_or_number(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}

// Root of increasing f on [lo, hi] (f(lo) <= 0 <= f(hi) assumed; clamps otherwise).
double bisect(const std::function<double(double)>& f, double lo, double hi, int steps = 60) {
  if (f(lo) >= 0) return lo;
  if (f(hi) <= 0) return hi;
  for (int i = 0; i < steps; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// E[p] and E[p^2] for p = sigmoid(z - sigma x), x ~ Normal(0, 1).
std::pair<double, double> logit_normal_moments(double z, double sigma) {
  double m1 = 0, m2 = 0, total = 0;
  for (int k = 0; k <= 240; ++k) {
    const double x = -6.0 + 12.0 * k / 240;
    const double w = std::exp(-0.5 * x * x) * ((k == 0 || k == 240) ? 0.5 : 1.0);
    const double p = sigmoid(z - sigma * x);
    m1 += w * p;
    m2 += w * p * p;
    total += w;
  }
  return {m1 / total, m2 / total};
}

StartingFit starting_moments(const std::vector<std::vector<double>>& prompts) {
  StartingFit s;
  std::vector<double> means;
  double within = 0, n_sum = 0;
  for (const auto& r : prompts) {
    if (r.size() < 2) continue;
    const double n = static_cast<double>(r.size());
    double m = 0;
    for (double x : r)
      m += x / n;
    double v = 0;
    for (double x : r)
      v += (x - m) * (x - m) / (n - 1);
    means.push_back(m);
    within += v;
    n_sum += n;
  }
  if (means.size() < 2) throw CalibrationError("measured: fewer than 2 base prompts with 2 seeds");
  s.prompts = static_cast<int>(means.size());
  s.candidates = n_sum / s.prompts;
  s.within = within / s.prompts;
  for (double m : means)
    s.mean += m / s.prompts;
  for (double m : means)
    s.between += (m - s.mean) * (m - s.mean) / (s.prompts - 1);
  return s;
}

// Mean Kendall tau-b between a seed's reward and its observation over groups of `group` seeds,
// groups where it is undefined (all tied) left out, as the trainer's audit does.
double model_tau(const LearningParams& params, int group, int steps, int rollout_steps,
                 int staleness, int prompts) {
  LearningModel model(params, 777);
  double sum = 0;
  int n = 0;
  for (int i = 0; i < prompts; ++i) {
    std::vector<double> truth, seen;
    for (int j = 0; j < group; ++j) {
      truth.push_back(model.reward(0, i, j));
      seen.push_back(model.observed_reward(0, i, j, steps, rollout_steps, staleness));
    }
    if (const auto tau = rl::kendall_tau_b(truth, seen)) {
      sum += *tau;
      ++n;
    }
  }
  return n > 0 ? sum / n : 1.0;
}

struct CurveTarget {
  const MeasuredConfig* config;
  std::vector<double> mean, se;  // per version of the first run's curve
  std::vector<int> versions;
  double between_variance = 0;  // across runs, averaged over versions > 0
  double jitter_variance = 0;   // of successive differences around the mean curve
  int runs = 0;
};

CurveTarget curve_target(const MeasuredConfig& c) {
  CurveTarget t;
  t.config = &c;
  t.runs = static_cast<int>(c.runs.size());
  if (c.runs.empty()) return t;
  for (const auto& [v, s] : c.runs.front().curve)
    t.versions.push_back(v);
  const std::size_t points = t.versions.size();
  std::vector<std::vector<double>> at(points);
  for (const auto& run : c.runs) {
    for (std::size_t k = 0; k < points && k < run.curve.size(); ++k)
      at[k].push_back(run.curve[k].second);
  }
  int between_n = 0;
  for (std::size_t k = 0; k < points; ++k) {
    const double n = static_cast<double>(at[k].size());
    double m = 0;
    for (double x : at[k])
      m += x / n;
    double v = 0;
    for (double x : at[k])
      v += n > 1 ? (x - m) * (x - m) / (n - 1) : 0;
    t.mean.push_back(m);
    t.se.push_back(std::sqrt(v / std::max(1.0, n)));
    if (t.versions[k] > 0 && n > 1) {
      t.between_variance += v;
      ++between_n;
    }
  }
  if (between_n > 0) t.between_variance /= between_n;
  double jitter = 0;
  int jitter_n = 0;
  for (const auto& run : c.runs) {
    for (std::size_t k = 2; k < points && k < run.curve.size(); ++k) {
      const double d =
          (run.curve[k].second - t.mean[k]) - (run.curve[k - 1].second - t.mean[k - 1]);
      jitter += d * d;
      ++jitter_n;
    }
  }
  if (jitter_n > 0) t.jitter_variance = jitter / jitter_n;
  return t;
}

// The same statistics of simulated runs.
struct SimulatedMoments {
  std::vector<double> mean;
  double between_variance = 0, jitter_variance = 0;
};

SimulatedMoments simulate_moments(const LearningParams& p, const ReplayOptions& o, int runs) {
  SimulatedMoments m;
  std::vector<ReplayRun> all;
  all.reserve(static_cast<std::size_t>(std::max(0, runs)));
  for (int r = 0; r < runs; ++r)
    all.push_back(replay(p, o, 1000 + static_cast<std::uint64_t>(r)));
  const std::size_t points = all.front().validations.size();
  m.mean.assign(points, 0.0);
  for (const auto& run : all)
    for (std::size_t k = 0; k < points; ++k)
      m.mean[k] += run.validations[k].second / runs;
  int between_n = 0, jitter_n = 0;
  for (std::size_t k = 1; k < points; ++k) {
    double v = 0;
    for (const auto& run : all) {
      const double d = run.validations[k].second - m.mean[k];
      v += d * d / (runs - 1);
    }
    m.between_variance += v;
    ++between_n;
  }
  m.between_variance /= std::max(1, between_n);
  for (const auto& run : all) {
    for (std::size_t k = 2; k < points; ++k) {
      const double d =
          (run.validations[k].second - m.mean[k]) - (run.validations[k - 1].second - m.mean[k - 1]);
      m.jitter_variance += d * d;
      ++jitter_n;
    }
  }
  m.jitter_variance /= std::max(1, jitter_n);
  return m;
}

// Sum over configurations and validation points after the base of the squared standardised
// distance between simulated and measured mean curves.
double curve_objective(const LearningParams& p, const std::vector<CurveTarget>& targets, int runs) {
  double j = 0;
  for (const auto& t : targets) {
    if (t.runs == 0) continue;
    const SimulatedMoments m = simulate_moments(p, t.config->replay, runs);
    for (std::size_t k = 1; k < t.mean.size() && k < m.mean.size(); ++k) {
      // The standard error of a mean of few runs is itself noisy: floor it at the validation
      // jitter of one run over the number of runs.
      const double floor = std::sqrt(std::max(t.jitter_variance, 1e-6) / t.runs);
      const double z = (m.mean[k] - t.mean[k]) / std::max(t.se[k], floor);
      j += z * z;
    }
  }
  return j;
}

// Nelder-Mead on f over x (2 dimensions here), from a start and initial step sizes.
std::vector<double> minimise(const std::function<double(const std::vector<double>&)>& f,
                             const std::vector<double>& x0, const std::vector<double>& step,
                             int iterations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> xs{x0};
  for (std::size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step[i];
    xs.push_back(x);
  }
  std::vector<double> fs;
  fs.reserve(xs.size());
  for (const auto& x : xs)
    fs.push_back(f(x));
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::size_t> order(xs.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return fs[a] < fs[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    std::vector<double> centre(n, 0.0);
    for (std::size_t i : order)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d)
          centre[d] += xs[i][d] / static_cast<double>(n);
    const auto along = [&](double a) {
      std::vector<double> x(n);
      for (std::size_t d = 0; d < n; ++d)
        x[d] = centre[d] + a * (xs[worst][d] - centre[d]);
      return x;
    };
    const auto reflected = along(-1.0);
    const double fr = f(reflected);
    if (fr < fs[best]) {
      const auto expanded = along(-2.0);
      const double fe = f(expanded);
      if (fe < fr) {
        xs[worst] = expanded;
        fs[worst] = fe;
      } else {
        xs[worst] = reflected;
        fs[worst] = fr;
      }
    } else if (fr < fs[second]) {
      xs[worst] = reflected;
      fs[worst] = fr;
    } else {
      const auto contracted = along(0.5);
      const double fc = f(contracted);
      if (fc < fs[worst]) {
        xs[worst] = contracted;
        fs[worst] = fc;
      } else {
        for (std::size_t i : order) {
          if (i == best) continue;
          for (std::size_t d = 0; d < n; ++d)
            xs[i][d] = xs[best][d] + 0.5 * (xs[i][d] - xs[best][d]);
          fs[i] = f(xs[i]);
        }
      }
    }
  }
  const auto best = std::min_element(fs.begin(), fs.end()) - fs.begin();
  return xs[static_cast<std::size_t>(best)];
}

Json params_json(const LearningParams& p) {
  return Json{{"z0", p.z0},
              {"sigma_d", p.sigma_d},
              {"reward_levels", p.reward_levels},
              {"validation_offset", p.validation_offset},
              {"prompt_pool", p.prompt_pool},
              {"stale_flip", p.stale_flip},
              {"steps_gamma", p.steps_gamma},
              {"eta", p.eta},
              {"noise", p.noise},
              {"step_noise", p.step_noise},
              {"validation_noise", p.validation_noise},
              {"global_std", p.global_std},
              {"advantage_clip", p.advantage_clip},
              {"offpolicy_efficiency", p.offpolicy_efficiency},
              {"law", to_string(p.law)},
              {"categories", p.categories},
              {"local_share", p.local_share},
              {"selection_efficiency", p.selection_efficiency}};
}

// End progress of each run (mean of its last `smooth` validations minus the base score), by seed.
std::map<std::uint64_t, double> run_ends(const MeasuredConfig& c, double base_score) {
  std::map<std::uint64_t, double> out;
  const std::size_t m = static_cast<std::size_t>(std::max(1, c.replay.smooth));
  for (const auto& run : c.runs) {
    if (run.curve.empty()) continue;
    const std::size_t n = std::min(m, run.curve.size());
    double sum = 0;
    for (std::size_t i = run.curve.size() - n; i < run.curve.size(); ++i)
      sum += run.curve[i].second;
    out[run.seed] = sum / static_cast<double>(n) - base_score;
  }
  return out;
}

}  // namespace

Measured load_measured(const std::filesystem::path& path) {
  const std::string where = path.string();
  const Json j = read_json(path);
  Measured m;
  try {
    // One input or several (scripts/sim-calibrate lists every results.json and run directory).
    if (const auto s = j.find("source"); s != j.end() && s->is_array()) {
      for (const auto& part : *s)
        m.source += (m.source.empty() ? "" : ", ") + part.get<std::string>();
    } else if (s != j.end()) {
      m.source = s->get<std::string>();
    }
    m.base_score = field(j, "base_score", where).get<double>();
    const Json& recipe = field(j, "recipe", where);
    ReplayOptions base;
    base.prompts = field(recipe, "prompts", where + ": recipe").get<int>();
    base.group_size = field(recipe, "group_size", where + ": recipe").get<int>();
    base.rollout_steps = field(recipe, "rollout_steps", where + ": recipe").get<int>();
    base.iterations = field(recipe, "iterations", where + ": recipe").get<int>();
    base.validate_every = field(recipe, "validate_every", where + ": recipe").get<int>();
    base.smooth = field(recipe, "smooth", where + ": recipe").get<int>();
    base.target = field(recipe, "target", where + ": recipe").get<double>();
    m.recipe = base;
    m.base_candidates = field(j, "base_candidates", where).get<std::vector<std::vector<double>>>();
    for (const Json& c : field(j, "configs", where)) {
      MeasuredConfig mc;
      mc.label = field(c, "label", where + ": configs").get<std::string>();
      const std::string at = where + ": config " + mc.label;
      mc.replay = base;
      mc.replay.mode = parse_mode(field(c, "mode", at).get<std::string>());
      mc.replay.candidates = field(c, "candidates", at).get<int>();
      mc.replay.explore_steps = field(c, "explore_steps", at).get<int>();
      mc.km_median = number_or_inf(field(c, "km_median", at));
      const Json& ci = field(c, "ci", at);
      mc.ci_low = number_or_inf(ci.at(0));
      mc.ci_high = number_or_inf(ci.at(1));
      for (const Json& r : field(c, "runs", at)) {
        MeasuredRun run;
        run.seed = field(r, "seed", at).get<std::uint64_t>();
        run.iterations = field(r, "iterations", at).get<int>();
        run.reached = field(r, "reached", at).get<bool>();
        for (const Json& point : field(r, "curve", at))
          run.curve.emplace_back(point.at(0).get<int>(), point.at(1).get<double>());
        mc.runs.push_back(std::move(run));
      }
      m.configs.push_back(std::move(mc));
    }
    for (const Json& t : field(j, "taus", where)) {
      TauMeasurement tm;
      tm.what = field(t, "what", where + ": taus").get<std::string>();
      tm.steps = field(t, "steps", where + ": taus").get<int>();
      tm.rollout_steps = field(t, "rollout_steps", where + ": taus").get<int>();
      tm.staleness = field(t, "staleness", where + ": taus").get<int>();
      tm.group = field(t, "group", where + ": taus").get<int>();
      tm.tau = field(t, "tau", where + ": taus").get<double>();
      tm.groups = field(t, "groups", where + ": taus").get<int>();
      m.taus.push_back(tm);
    }
  } catch (const Json::exception& e) {
    throw CalibrationError(where + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw CalibrationError(where + ": " + e.what());
  }
  return m;
}

std::vector<ConfigCheck> check(const Measured& measured, const LearningParams& params,
                               int replays) {
  std::vector<ConfigCheck> out;
  for (const auto& c : measured.configs) {
    ConfigCheck k;
    k.label = c.label;
    k.measured_median = c.km_median;
    k.ci_low = c.ci_low;
    k.ci_high = c.ci_high;
    k.measured_runs = static_cast<int>(c.runs.size());
    const ReplaySummary s = replay_many(params, c.replay, replays, 5000);
    k.simulated_median = s.km_median;
    k.simulated_reached = s.reached_share;
    k.checked = k.measured_runs >= kMinRunsToCheck;
    k.within = k.simulated_median >= k.ci_low - 1e-9 && k.simulated_median <= k.ci_high + 1e-9;
    const CurveTarget t = curve_target(c);
    double sq = 0;
    int n = 0;
    for (std::size_t i = 1; i < t.mean.size() && i < s.mean_observed.size(); ++i) {
      sq += (s.mean_observed[i] - t.mean[i]) * (s.mean_observed[i] - t.mean[i]);
      ++n;
    }
    k.curve_rmse = n > 0 ? std::sqrt(sq / n) : 0;
    // End-of-run progress over the last `smooth` validations.
    const auto tail_mean = [&](const std::vector<double>& curve) {
      const std::size_t m = std::min<std::size_t>(
          curve.size(), static_cast<std::size_t>(std::max(1, c.replay.smooth)));
      double sum = 0;
      for (std::size_t i = curve.size() - m; i < curve.size(); ++i)
        sum += curve[i];
      return m > 0 ? sum / static_cast<double>(m) : 0.0;
    };
    std::vector<double> ends;
    for (const auto& run : c.runs) {
      std::vector<double> scores;
      for (const auto& [version, score] : run.curve)
        scores.push_back(score);
      if (!scores.empty()) ends.push_back(tail_mean(scores) - measured.base_score);
    }
    if (!ends.empty()) {
      double mean = 0, var = 0;
      for (double e : ends)
        mean += e / static_cast<double>(ends.size());
      for (double e : ends)
        var += ends.size() > 1 ? (e - mean) * (e - mean) / static_cast<double>(ends.size() - 1) : 0;
      k.measured_progress = mean;
      k.measured_progress_se = std::sqrt(var / static_cast<double>(ends.size()));
    }
    if (!s.mean_observed.empty()) {
      k.simulated_progress = tail_mean(s.mean_observed) - measured.base_score;
    }
    k.progress_within =
        std::abs(k.simulated_progress - k.measured_progress) <= 2 * k.measured_progress_se + 1e-12;
    out.push_back(k);
  }
  return out;
}

std::vector<GainCheck> check_gains(const Measured& measured, const LearningParams& params,
                                   int replays, int bootstrap) {
  const auto none = std::find_if(measured.configs.begin(), measured.configs.end(),
                                 [](const MeasuredConfig& c) { return c.label == "none"; });
  if (none == measured.configs.end()) {
    throw CalibrationError(measured.source +
                           ": no plain GRPO configuration (none) to compare with");
  }
  const auto simulated_end = [&](const MeasuredConfig& c) {
    const ReplaySummary s = replay_many(params, c.replay, replays, 5000);
    const std::size_t m =
        std::min(s.mean_observed.size(), static_cast<std::size_t>(std::max(1, c.replay.smooth)));
    double sum = 0;
    for (std::size_t i = s.mean_observed.size() - m; i < s.mean_observed.size(); ++i)
      sum += s.mean_observed[i];
    return m > 0 ? sum / static_cast<double>(m) - measured.base_score : 0.0;
  };
  const double none_simulated = simulated_end(*none);
  const auto none_ends = run_ends(*none, measured.base_score);
  std::vector<GainCheck> out;
  for (const auto& c : measured.configs) {
    if (&c == &*none) continue;
    GainCheck g;
    g.label = c.label;
    const auto ends = run_ends(c, measured.base_score);
    // Paired by seed where both have it (the benchmark runs a seed's modes back to back).
    std::vector<std::pair<double, double>> pairs;
    for (const auto& [seed, e] : ends)
      if (const auto it = none_ends.find(seed); it != none_ends.end())
        pairs.emplace_back(e, it->second);
    const bool paired = pairs.size() == ends.size() && pairs.size() == none_ends.size();
    std::vector<double> mine, theirs;
    for (const auto& [seed, e] : ends)
      mine.push_back(e);
    for (const auto& [seed, e] : none_ends)
      theirs.push_back(e);
    const auto mean = [](const std::vector<double>& v) {
      double m = 0;
      for (double x : v)
        m += x / static_cast<double>(v.size());
      return m;
    };
    if (mine.empty() || theirs.empty()) continue;
    g.measured_gain = mean(mine) / mean(theirs);
    std::mt19937_64 rng(0x5eed);
    std::vector<double> ratios;
    std::vector<double> a, b;
    for (int k = 0; k < bootstrap; ++k) {
      a.clear();
      b.clear();
      if (paired) {
        std::uniform_int_distribution<std::size_t> pick(0, pairs.size() - 1);
        for (std::size_t i = 0; i < pairs.size(); ++i) {
          const auto& [x, y] = pairs[pick(rng)];
          a.push_back(x);
          b.push_back(y);
        }
      } else {
        std::uniform_int_distribution<std::size_t> pa(0, mine.size() - 1), pb(0, theirs.size() - 1);
        for (std::size_t i = 0; i < mine.size(); ++i)
          a.push_back(mine[pa(rng)]);
        for (std::size_t i = 0; i < theirs.size(); ++i)
          b.push_back(theirs[pb(rng)]);
      }
      const double denominator = mean(b);
      // A resample in which plain GRPO made no progress has no finite ratio: it counts as above
      // every finite one (an interval that reaches it is open above).
      ratios.push_back(denominator > 0 ? mean(a) / denominator : kInf);
    }
    std::sort(ratios.begin(), ratios.end());
    const auto at = [&](double q) {
      return ratios[std::min(ratios.size() - 1, static_cast<std::size_t>(q * ratios.size()))];
    };
    g.ci_low = at(0.025);
    g.ci_high = at(0.975);
    g.simulated_gain = none_simulated > 0 ? simulated_end(c) / none_simulated : kInf;
    g.too_little = g.simulated_gain < g.ci_low - 1e-12;
    g.too_much = g.simulated_gain > g.ci_high + 1e-12;
    out.push_back(g);
  }
  return out;
}

LearningParams fit_starting(const std::vector<std::vector<double>>& base_candidates,
                            StartingFit* moments) {
  LearningParams p;
  StartingFit s = starting_moments(base_candidates);
  const double var_p = std::max(1e-6, s.between - s.within / s.candidates);
  s.k_raw = (s.mean * (1 - s.mean) - var_p) / std::max(s.within, 1e-9);
  p.reward_levels = std::max(1, static_cast<int>(std::lround(s.k_raw)));
  const auto z_for = [&](double sigma) {
    return bisect([&](double z) { return logit_normal_moments(z, sigma).first - s.mean; }, -10, 10);
  };
  p.sigma_d = bisect(
      [&](double sigma) {
        const double z = z_for(sigma);
        const auto [m1, m2] = logit_normal_moments(z, sigma);
        return (m2 - m1 * m1) - var_p;
      },
      0.0, 10.0);
  p.z0 = z_for(p.sigma_d);
  if (moments) *moments = s;
  return p;
}

FitReport fit(const Measured& measured, const FitOptions& options) {
  FitReport report;
  LearningParams p;
  // 1. The starting distribution.
  StartingFit s;
  p = fit_starting(measured.base_candidates, &s);
  p.validation_offset = bisect(
      [&](double delta) {
        LearningParams q = p;
        q.validation_offset = delta;
        return LearningModel(q, 0).score() - measured.base_score;
      },
      -10, 10);
  report.starting = s;

  // 2. Observation noise.
  double stale_sum = 0, stale_weight = 0;
  for (const auto& t : measured.taus) {
    if (t.what != "staleness" || t.groups <= 0) continue;
    const double f = bisect(
        [&](double flip) {
          LearningParams q = p;
          q.stale_flip = flip;
          return t.tau -
                 model_tau(q, t.group, t.steps, t.rollout_steps, t.staleness, options.tau_prompts);
        },
        0.0, 1.0, 30);
    stale_sum += f * t.groups;
    stale_weight += t.groups;
  }
  if (stale_weight > 0) p.stale_flip = stale_sum / stale_weight;
  double num = 0, den = 0;
  for (const auto& t : measured.taus) {
    if (t.what != "steps" || t.groups <= 0 || t.steps >= t.rollout_steps) continue;
    LearningParams q = p;
    q.stale_flip = 0;
    const double fraction = static_cast<double>(t.steps) / t.rollout_steps;
    const double f = bisect(
        [&](double flip) {
          q.steps_gamma = std::log(std::max(flip, 1e-9)) / std::log(1 - fraction);
          return t.tau - model_tau(q, t.group, t.steps, t.rollout_steps, 0, options.tau_prompts);
        },
        1e-6, 1.0, 30);
    const double x = std::log(1 - fraction), y = std::log(std::max(f, 1e-6));
    num += t.groups * x * y;
    den += t.groups * x * x;
  }
  if (den > 0) p.steps_gamma = std::max(0.01, num / den);
  for (const auto& t : measured.taus) {
    const LearningParams& q = p;
    report.taus.emplace_back(t.what + " S=" + std::to_string(t.steps) + "/" +
                                 std::to_string(t.rollout_steps) +
                                 " staleness=" + std::to_string(t.staleness) + " measured",
                             t.tau);
    report.taus.emplace_back(
        t.what + " S=" + std::to_string(t.steps) + "/" + std::to_string(t.rollout_steps) +
            " staleness=" + std::to_string(t.staleness) + " model",
        model_tau(q, t.group, t.steps, t.rollout_steps, t.staleness, options.tau_prompts));
  }

  // 3. Progress on the mean curves of the configurations fitted (no noise: the means do not need
  // it); then w and sigma_v on their variances.
  std::vector<CurveTarget> targets;
  for (const auto& c : measured.configs) {
    if (!options.fit_labels.empty() &&
        std::find(options.fit_labels.begin(), options.fit_labels.end(), c.label) ==
            options.fit_labels.end()) {
      continue;
    }
    targets.push_back(curve_target(c));
    report.fitted_labels.push_back(c.label);
  }
  if (targets.empty()) throw CalibrationError("fit: no measured configuration to fit");
  p.law = options.law;
  if (options.law == Law::kCosine) {
    // eta and c.
    const auto objective = [&](const std::vector<double>& x) {
      LearningParams q = p;
      q.eta = std::exp(x[0]);
      q.noise = std::exp(x[1]);
      return curve_objective(q, targets, options.replays);
    };
    // A coarse grid first (the surface has a long valley along eta ~ sqrt(c)), then Nelder-Mead.
    std::vector<double> best{std::log(0.05), std::log(1.0)};
    double best_value = kInf;
    // (while loops: the grid's values summed step by step, as the committed fit's were)
    double le = std::log(0.003);
    while (le <= std::log(1.0)) {
      double lc = std::log(0.01);
      while (lc <= std::log(100.0)) {
        const double v = objective({le, lc});
        if (v < best_value) {
          best_value = v;
          best = {le, lc};
        }
        lc += 0.7;
      }
      le += 0.35;
    }
    best = minimise(objective, best, {0.2, 0.4}, 40);
    p.eta = std::exp(best[0]);
    p.noise = std::exp(best[1]);
  } else {
    // eta and selection_efficiency for each lambda of the grid; the best of them.
    p.categories = options.categories;
    double best_value = kInf;
    LearningParams best_params = p;
    for (const double lambda : options.local_shares) {
      LearningParams base = p;
      base.local_share = lambda;
      const auto objective = [&](const std::vector<double>& x) {
        LearningParams q = base;
        q.eta = std::exp(x[0]);
        q.selection_efficiency = std::max(0.0, x[1]);
        return curve_objective(q, targets, options.replays);
      };
      std::vector<double> best{std::log(0.05), 1.0};
      double value = kInf;
      double le = std::log(0.002);
      while (le <= std::log(2.0)) {
        for (int step = 0; step <= 6; ++step) {
          const double e = 0.5 * step;
          const double v = objective({le, e});
          if (v < value) {
            value = v;
            best = {le, e};
          }
        }
        le += 0.35;
      }
      best = minimise(objective, best, {0.2, 0.25}, 40);
      value = objective(best);
      if (value < best_value) {
        best_value = value;
        best_params = base;
        best_params.eta = std::exp(best[0]);
        best_params.selection_efficiency = std::max(0.0, best[1]);
      }
    }
    p = best_params;
  }

  double between = 0, jitter = 0;
  int weight = 0;
  for (const auto& t : targets) {
    if (t.runs < 2) continue;
    between += t.between_variance * t.runs;
    jitter += t.jitter_variance * t.runs;
    weight += t.runs;
  }
  if (weight > 0) {
    between /= weight;
    jitter /= weight;
    const auto moments = [&](double w, double v) {
      LearningParams q = p;
      q.step_noise = w;
      q.validation_noise = v;
      double b = 0, jt = 0;
      int n = 0;
      for (const auto& t : targets) {
        if (t.runs < 2) continue;
        const SimulatedMoments m = simulate_moments(q, t.config->replay, options.replays);
        b += m.between_variance * t.runs;
        jt += m.jitter_variance * t.runs;
        n += t.runs;
      }
      return std::pair<double, double>{b / n, jt / n};
    };
    // Successive differences are mostly validation noise: sigma_v first from the jitter alone,
    // then w for the rest of the between-run spread, then sigma_v once more.
    double v = std::sqrt(jitter / 2.0), w = 0;
    for (int round = 0; round < 2; ++round) {
      w = bisect([&](double x) { return moments(x, v).first - between; }, 0.0, 20.0, 25);
      v = bisect([&](double x) { return moments(w, x).second - jitter; }, 0.0, 0.2, 25);
    }
    p.step_noise = w;
    p.validation_noise = v;
  }
  report.objective = curve_objective(p, targets, options.replays);
  report.params = p;
  report.target = measured.recipe.target;
  report.checks = check(measured, p, options.check_replays);
  return report;
}

void write_fitted(const std::filesystem::path& path, const FitReport& r,
                  const std::string& source) {
  Json checks = Json::array();
  for (const auto& c : r.checks) {
    checks.push_back({{"label", c.label},
                      {"measured_runs", c.measured_runs},
                      {"measured_km_median", inf_or_number(c.measured_median)},
                      {"measured_ci", {inf_or_number(c.ci_low), inf_or_number(c.ci_high)}},
                      {"simulated_km_median", inf_or_number(c.simulated_median)},
                      {"simulated_reached_share", c.simulated_reached},
                      {"checked", c.checked},
                      {"within_ci", c.within},
                      {"curve_rmse", c.curve_rmse},
                      {"measured_end_progress", c.measured_progress},
                      {"measured_end_progress_se", c.measured_progress_se},
                      {"simulated_end_progress", c.simulated_progress},
                      {"end_progress_within", c.progress_within}});
  }
  Json taus = Json::object();
  for (const auto& [k, v] : r.taus)
    taus[k] = v;
  const Json j{{"about",
                "Learning-model parameters fitted by `spotlight-sim fit` (tools/simulator/"
                "calibration.hpp) from the measured file named in `source`; `fit` says how well "
                "they reproduce it."},
               {"source", source},
               {"target", r.target},
               {"fitted_configurations", r.fitted_labels},
               {"params", params_json(r.params)},
               {"fit",
                {{"starting",
                  {{"prompts", r.starting.prompts},
                   {"candidates_per_prompt", r.starting.candidates},
                   {"mean", r.starting.mean},
                   {"between_prompt_variance", r.starting.between},
                   {"within_prompt_variance", r.starting.within},
                   {"reward_levels_unrounded", r.starting.k_raw}}},
                 {"taus", taus},
                 {"curve_objective", r.objective},
                 {"checks", checks}}}};
  std::ofstream out(path);
  if (!out) throw CalibrationError(path.string() + ": cannot write");
  out << j.dump(1) << "\n";
}

LearningParams load_fitted(const std::filesystem::path& path) {
  const Json j = read_json(path);
  const std::string where = path.string();
  const Json& p = field(j, "params", where);
  LearningParams l;
  try {
    const std::string at = where + ": params";
    l.z0 = field(p, "z0", at).get<double>();
    l.sigma_d = field(p, "sigma_d", at).get<double>();
    l.reward_levels = field(p, "reward_levels", at).get<int>();
    l.validation_offset = field(p, "validation_offset", at).get<double>();
    l.prompt_pool = field(p, "prompt_pool", at).get<int>();
    l.stale_flip = field(p, "stale_flip", at).get<double>();
    l.steps_gamma = field(p, "steps_gamma", at).get<double>();
    l.eta = field(p, "eta", at).get<double>();
    l.noise = field(p, "noise", at).get<double>();
    l.step_noise = field(p, "step_noise", at).get<double>();
    l.validation_noise = field(p, "validation_noise", at).get<double>();
    l.global_std = field(p, "global_std", at).get<bool>();
    l.advantage_clip = field(p, "advantage_clip", at).get<double>();
    l.offpolicy_efficiency = field(p, "offpolicy_efficiency", at).get<double>();
    // Law kContrast's parameters; a file without them is a fit of law kCosine.
    if (p.contains("law")) {
      l.law = parse_law(p.at("law").get<std::string>());
      l.categories = field(p, "categories", at).get<int>();
      l.local_share = field(p, "local_share", at).get<double>();
      l.selection_efficiency = field(p, "selection_efficiency", at).get<double>();
    }
  } catch (const std::invalid_argument& e) {
    throw CalibrationError(where + ": " + e.what());
  } catch (const Json::exception& e) {
    throw CalibrationError(where + ": " + e.what());
  }
  return l;
}

}  // namespace spotlight::simulator
