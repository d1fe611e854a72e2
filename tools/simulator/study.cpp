#include "tools/simulator/study.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace spotlight::simulator {
namespace {

using Json = nlohmann::json;

double round_to(double x, double unit) {
  return std::round(x / unit) * unit;
}

Json run_json(const std::string& calibration, const std::string& trace, double ratio,
              double startup, const std::string& mode, int offset, const ClusterResult& r) {
  Json arms = Json::object();
  for (const auto& [arm, n] : r.arms)
    arms[arm] = n;
  return Json{{"calibration", calibration},
              {"trace", trace},
              {"ratio", ratio},
              {"startup", startup},
              {"mode", mode},
              {"offset", offset},
              {"reached", r.reached},
              {"iterations", r.iterations},
              {"seconds", round_to(r.seconds, 0.1)},
              {"cost", round_to(r.cost(), 0.01)},
              {"reserved_cost", round_to(r.reserved_cost, 0.01)},
              {"spot_cost", round_to(r.spot_cost, 0.01)},
              {"final_score", round_to(r.final_score, 1e-4)},
              {"mean_held_spot", round_to(r.mean_held_spot, 0.01)},
              {"spot_gpu_hours", round_to(r.mean_held_spot * r.seconds / 3600.0, 0.01)},
              {"spot_busy_share", round_to(r.spot_busy_share, 1e-3)},
              {"mean_wait_seconds", round_to(r.mean_wait_seconds, 0.01)},
              {"fallback_prompts", r.fallback_prompts},
              {"preemptions", r.preemptions},
              {"lost_gpu_seconds", round_to(r.lost_gpu_seconds, 0.1)},
              {"mean_informative", round_to(r.mean_informative, 0.01)},
              {"arms", arms}};
}

ClusterOptions options_for(const StudyOptions& s, const Calibration& c, double ratio,
                           double startup, int offset, const Trace* trace) {
  ClusterOptions o = s.base;
  o.costs.explorer_startup_seconds = startup;
  o.learning = c.learning;
  o.target_score = c.target_score;
  o.spot_ratio = ratio;
  o.seed = static_cast<std::uint64_t>(offset);
  if (!c.candidates.empty()) o.bandit.candidates = c.candidates;
  if (c.sync_candidates > 0) o.sync_candidates = c.sync_candidates;
  if (trace) {
    o.trace_offset_seconds =
        std::floor(static_cast<double>(offset) * trace->data.size() / s.offsets) *
        trace->gap_seconds;
  }
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// f(0), ..., f(n - 1) on up to `jobs` threads, results in index order.
template <typename F>
std::vector<ClusterResult> for_offsets(int n, int jobs, const F& f) {
  std::vector<ClusterResult> out(static_cast<std::size_t>(n));
  if (jobs <= 1) {
    for (int i = 0; i < n; ++i)
      out[static_cast<std::size_t>(i)] = f(i);
    return out;
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(jobs));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(jobs));
  for (int j = 0; j < jobs; ++j) {
    threads.emplace_back([&, j] {
      try {
        for (int i = j; i < n; i += jobs)
          out[static_cast<std::size_t>(i)] = f(i);
      } catch (...) {
        errors[static_cast<std::size_t>(j)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

bool wanted(const StudyOptions& s, const std::string& mode) {
  return std::find(s.modes.begin(), s.modes.end(), mode) != s.modes.end();
}

}  // namespace

std::string describe_study(const StudyOptions& s) {
  const ClusterOptions& b = s.base;
  Json cals = Json::array();
  for (const auto& c : s.calibrations) {
    cals.push_back({{"name", c.name},
                    {"about", c.about},
                    {"target_score", c.target_score},
                    {"candidates", c.candidates},
                    {"sync_candidates", c.sync_candidates},
                    {"learning",
                     {{"z0", c.learning.z0},
                      {"sigma_d", c.learning.sigma_d},
                      {"reward_levels", c.learning.reward_levels},
                      {"validation_offset", c.learning.validation_offset},
                      {"prompt_pool", c.learning.prompt_pool},
                      {"stale_flip", c.learning.stale_flip},
                      {"steps_gamma", c.learning.steps_gamma},
                      {"eta", c.learning.eta},
                      {"noise", c.learning.noise},
                      {"step_noise", c.learning.step_noise},
                      {"global_std", c.learning.global_std},
                      {"offpolicy_efficiency", c.learning.offpolicy_efficiency},
                      {"law", to_string(c.learning.law)},
                      {"categories", c.learning.categories},
                      {"category_offsets", c.learning.category_offsets},
                      {"local_share", c.learning.local_share},
                      {"selection_efficiency", c.learning.selection_efficiency}}}});
  }
  std::vector<std::string> traces;
  for (const auto& t : s.traces)
    traces.push_back(t.name);
  const Json j{{"study",
                {{"reserved_gpus", b.reserved_gpus},
                 {"prompts", b.prompts},
                 {"group_size", b.group_size},
                 {"rollout_steps", b.rollout_steps},
                 {"trained_steps", b.trained_steps},
                 {"sync_steps", b.sync_steps},
                 {"explore_steps", b.bandit.steps},
                 {"time_margin", b.bandit.time_margin},
                 {"max_wait_share", b.max_wait_share},
                 {"min_idle_seconds", b.min_idle_seconds},
                 {"offsets", s.offsets},
                 {"ratios", s.ratios},
                 {"gains", s.gains},
                 {"startups", s.startups},
                 {"modes", s.modes},
                 {"traces", traces},
                 {"costs",
                  {{"hardware", b.costs.hardware},
                   {"seconds_per_sample_step", b.costs.seconds_per_sample_step},
                   {"measured", b.costs.measured},
                   {"source", b.costs.source},
                   {"train_cost_factor", b.costs.train_cost_factor},
                   {"explorer_startup_seconds", b.costs.explorer_startup_seconds},
                   {"weight_publish_seconds", b.costs.weight_publish_seconds},
                   {"async_audit_share", b.costs.async_audit_share},
                   {"async_wait_share", b.costs.async_wait_share},
                   {"dp_efficiency_per_doubling", b.costs.dp_efficiency_per_doubling},
                   {"reserved_price_per_hour", b.costs.reserved_price_per_hour},
                   {"spot_price_ratio", b.costs.spot_price_ratio}}},
                 {"calibrations", cals}}}};
  return j.dump();
}

void run_study(const StudyOptions& s, std::ostream& out,
               const std::function<void(const std::string&)>& progress) {
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  out << describe_study(s) << "\n";
  for (const auto& c : s.calibrations) {
    // Baselines on the reserved GPUs alone.
    std::vector<double> none_iterations;
    for (const char* mode : {"none", "sync"}) {
      if (!wanted(s, mode) && std::string(mode) != "none") continue;
      const auto results = for_offsets(s.offsets, s.jobs, [&](int i) {
        return simulate_cluster(parse_mode(mode), options_for(s, c, 1, 0, i, nullptr), nullptr);
      });
      for (int i = 0; i < s.offsets; ++i) {
        const ClusterResult& r = results[static_cast<std::size_t>(i)];
        if (std::string(mode) == "none") none_iterations.push_back(r.iterations);
        out << run_json(c.name, "", 0, 0, mode, i, r).dump() << "\n";
      }
      say(c.name + ": " + mode + " done");
    }
    const double none_median = median(none_iterations);
    for (const auto& trace : s.traces) {
      for (double ratio : s.ratios) {
        for (double startup : s.startups) {
          const auto options = [&](int i, const Trace* t) {
            return options_for(s, c, ratio, startup, i, t);
          };
          std::vector<double> held;
          for (const char* mode : {"offload", "offload-pipelined", "async", "async-reuse"}) {
            if (!wanted(s, mode)) continue;
            const auto results = for_offsets(s.offsets, s.jobs, [&](int i) {
              return simulate_cluster(parse_mode(mode), options(i, &trace), &trace);
            });
            for (int i = 0; i < s.offsets; ++i) {
              const ClusterResult& r = results[static_cast<std::size_t>(i)];
              if (std::string(mode) == "async") held.push_back(r.mean_held_spot);
              out << run_json(c.name, trace.name, ratio, startup, mode, i, r).dump() << "\n";
            }
          }
          if (wanted(s, "none-matched") && !held.empty()) {
            double mean_held = 0;
            for (double h : held)
              mean_held += h / static_cast<double>(held.size());
            const auto results = for_offsets(s.offsets, s.jobs, [&](int i) {
              ClusterOptions o = options(i, nullptr);
              o.matched_spot_gpus = mean_held;
              return simulate_cluster(Mode::kNoneMatched, o, nullptr);
            });
            for (int i = 0; i < s.offsets; ++i) {
              const ClusterResult& r = results[static_cast<std::size_t>(i)];
              out << run_json(c.name, trace.name, ratio, startup, "none-matched", i, r).dump()
                  << "\n";
            }
          }
          for (double g : s.gains) {
            const int iterations = std::max(1, static_cast<int>(std::ceil(none_median / g - 1e-9)));
            const auto results = for_offsets(s.offsets, s.jobs, [&](int i) {
              ClusterOptions o = options(i, &trace);
              o.fixed_iterations = iterations;
              return simulate_cluster(Mode::kAsync, o, &trace);
            });
            for (int i = 0; i < s.offsets; ++i) {
              const ClusterResult& r = results[static_cast<std::size_t>(i)];
              Json line = run_json(c.name, trace.name, ratio, startup, "async-gain", i, r);
              line["gain"] = g;
              out << line.dump() << "\n";
            }
          }
          std::ostringstream what;
          what << c.name << ": " << trace.name << " ratio 1:" << ratio << " start-up " << startup
               << " s done";
          say(what.str());
        }
      }
    }
  }
}

}  // namespace spotlight::simulator
