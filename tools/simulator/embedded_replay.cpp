#include "tools/simulator/embedded_replay.hpp"

#include <algorithm>
#include <stdexcept>

namespace spotlight::simulator {

ReplayRun replay(const LearningParams& params, const ReplayOptions& o, std::uint64_t seed) {
  LearningModel model(params, seed);
  ReplayRun run;
  int zero = 0, groups = 0;
  std::vector<double> window;
  const auto validate = [&](int version) {
    const double s = model.observed_score(version);
    run.validations.emplace_back(version, s);
    run.expected.push_back(model.score());
    window.push_back(s);
    if (static_cast<int>(window.size()) > o.smooth) window.erase(window.begin());
    double mean = 0;
    for (double x : window)
      mean += x / static_cast<double>(window.size());
    if (!run.reached && version > 0 && mean >= o.target) {
      run.reached = true;
      run.iterations_to_target = version;
    }
  };
  validate(0);
  LevelCounts trained(params.reward_levels);
  for (int k = 0; k < o.iterations; ++k) {
    trained.clear();
    double efficiency = 1.0;
    for (int i = 0; i < o.prompts; ++i) {
      if (o.mode == Mode::kNone || o.mode == Mode::kNoneMatched || o.mode == Mode::kOffload ||
          o.mode == Mode::kOffloadPipelined) {
        model.add_plain_group(k, i, o.group_size, trained);
        // One step off: rollouts of the previous weights (the first iteration's of the base).
        if (o.mode == Mode::kOffloadPipelined && k > 0) efficiency = params.offpolicy_efficiency;
      } else {
        // sync explores with these weights; sync-stale, async and reuse with the previous ones
        // (the first iteration's exploration used the base itself).
        const int staleness = o.mode == Mode::kSync || k == 0 ? 0 : 1;
        const bool reuse = o.mode == Mode::kAsyncReuse;
        const int steps = reuse ? o.rollout_steps : o.explore_steps;
        model.add_selected_group(k, i, o.candidates, steps, o.rollout_steps, staleness,
                                 o.group_size, reuse, trained);
        if (reuse && staleness > 0) efficiency = params.offpolicy_efficiency;
      }
    }
    const UpdateReport u = model.train(trained, efficiency);
    zero += u.zero_groups;
    groups += trained.groups();
    const int version = k + 1;
    if (version % o.validate_every == 0 || version == o.iterations) validate(version);
  }
  if (!run.reached) run.iterations_to_target = run.validations.back().first;
  run.zero_share = groups > 0 ? static_cast<double>(zero) / groups : 0;
  return run;
}

double km_median(std::vector<std::pair<double, bool>> events) {
  // Events before censorings at the same time (as scripts/benchmark_stats.py).
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : (a.second && !b.second);
  });
  double at_risk = static_cast<double>(events.size());
  double survival = 1.0;
  std::size_t i = 0;
  while (i < events.size()) {
    const double t = events[i].first;
    int reached = 0, censored = 0;
    while (i < events.size() && events[i].first == t) {
      (events[i].second ? reached : censored) += 1;
      ++i;
    }
    if (reached > 0) {
      survival *= 1.0 - reached / at_risk;
      if (survival <= 0.5 + 1e-12) return t;
    }
    at_risk -= reached + censored;
  }
  return std::numeric_limits<double>::infinity();
}

ReplaySummary replay_many(const LearningParams& params, const ReplayOptions& o, int runs,
                          std::uint64_t first_seed) {
  if (runs < 1) throw std::invalid_argument("replay_many: runs < 1");
  ReplaySummary s;
  s.runs = runs;
  std::vector<std::pair<double, bool>> events;
  for (int r = 0; r < runs; ++r) {
    const ReplayRun run = replay(params, o, first_seed + static_cast<std::uint64_t>(r));
    events.emplace_back(run.iterations_to_target, run.reached);
    if (s.versions.empty()) {
      for (const auto& [v, score] : run.validations)
        s.versions.push_back(v);
      s.mean_expected.assign(s.versions.size(), 0.0);
      s.mean_observed.assign(s.versions.size(), 0.0);
    }
    for (std::size_t k = 0; k < run.validations.size(); ++k) {
      s.mean_expected[k] += run.expected[k] / runs;
      s.mean_observed[k] += run.validations[k].second / runs;
    }
    s.zero_share += run.zero_share / runs;
    s.reached_share += run.reached ? 1.0 / runs : 0.0;  // no censoring before the budget
  }
  s.km_median = km_median(events);
  return s;
}

}  // namespace spotlight::simulator
