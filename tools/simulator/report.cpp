#include "tools/simulator/report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace spotlight::simulator {
namespace {

struct Mean {
  double seconds = 0, cost = 0, iterations = 0, live = 0, busy = 0, wait = 0, iteration = 0;
  double fallback = 0, preemptions = 0, reclaimed = 0;
  int reached = 0, runs = 0;
  std::map<std::string, int> arms;
};

Mean average(const std::vector<SimResult>& results) {
  Mean m;
  for (const auto& r : results) {
    m.seconds += r.seconds;
    m.cost += r.cost();
    m.iterations += r.iterations;
    m.live += r.mean_live_explorers;
    m.busy += r.spot_busy_share;
    m.wait += r.mean_wait_seconds;
    m.iteration += r.mean_iteration_seconds;
    m.fallback += r.fallback_prompts;
    m.preemptions += static_cast<double>(r.preemptions);
    m.reclaimed += static_cast<double>(r.leases_reclaimed);
    m.reached += r.reached ? 1 : 0;
    ++m.runs;
    for (const auto& [arm, n] : r.arms)
      m.arms[arm] += n;
  }
  const double n = std::max(1, m.runs);
  for (double* x : {&m.seconds, &m.cost, &m.iterations, &m.live, &m.busy, &m.wait, &m.iteration,
                    &m.fallback, &m.preemptions, &m.reclaimed})
    *x /= n;
  return m;
}

std::string f(const char* spec, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, x);
  return buf;
}

std::string top_arms(const std::map<std::string, int>& arms) {
  std::vector<std::pair<int, std::string>> v;
  int total = 0;
  for (const auto& [a, n] : arms) {
    v.push_back({n, a});
    total += n;
  }
  std::sort(v.rbegin(), v.rend());
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 3; ++i) {
    out += (i ? ", " : "") + v[i].second + " " + f("%.0f%%", 100.0 * v[i].first / total);
  }
  return out;
}

std::vector<SimResult> repeat(Mode mode, const StudyOptions& o, const Trace* trace, int size) {
  std::vector<SimResult> out;
  for (int s = 0; s < o.seeds; ++s) {
    SimOptions sim = o.sim;
    sim.seed = o.sim.seed + static_cast<std::uint64_t>(s);
    out.push_back(simulate(mode, sim, trace, size));
  }
  return out;
}

}  // namespace

void run_study(const StudyOptions& o, std::ostream& out, report::Page* page) {
  const Mean none = average(repeat(Mode::kNone, o, nullptr, 0));
  const Mean sync = average(repeat(Mode::kSync, o, nullptr, 0));
  std::ostringstream title;
  title << "Cluster simulation: " << o.sim.hardware << ", " << o.sim.reserved_gpus
        << " reserved GPUs, spot pools of " << o.spot_sizes.front() << ".." << o.spot_sizes.back()
        << " GPUs";
  out << "# " << title.str() << "\n\n";
  out << "Per-sample-step time t = " << o.sim.seconds_per_sample_step << " s, "
      << (o.sim.measured_step_time ? "measured on " + o.sim.measured_step_time->device
                                   : std::string("the FLOP estimate (not measured)"))
      << " (see Assumptions).\n\n";
  report::Table baselines{{"mode", "reached", "iterations to target", "time to target (h)",
                           "cost to target", "mean iteration (s)"},
                          {}};
  report::Table spotlight{
      {"trace", "spot GPUs (peak)", "mean live explorers", "reached", "iterations",
       "time to target (h)", "speed-up vs none", "vs sync", "cost to target", "cheaper vs none",
       "vs sync", "mean wait (s)", "spot busy share", "fallback prompts", "preemptions",
       "leases reclaimed", "arms (N x S)"},
      {}};
  report::LineChart speedup{
      "Time to target: speed-up against none", "spot GPUs (peak)", "x faster than none", {}};
  report::LineChart cheaper{
      "Cost to target: saving against none", "spot GPUs (peak)", "x cheaper than none", {}};
  out << "Baselines (reserved GPUs only; mean of " << o.seeds << " seeds):\n\n";
  out << "| mode | reached | iterations to target | time to target (h) | cost to target | mean "
         "iteration (s) |\n|---|---|---|---|---|---|\n";
  for (const auto& [name, m] :
       {std::pair<const char*, const Mean&>{"none", none}, {"sync", sync}}) {
    out << "| " << name << " | " << m.reached << "/" << m.runs << " | " << f("%.0f", m.iterations)
        << " | " << f("%.1f", m.seconds / 3600) << " | " << f("%.0f", m.cost) << " | "
        << f("%.0f", m.iteration) << " |\n";
    baselines.rows.push_back({name, std::to_string(m.reached) + "/" + std::to_string(m.runs),
                              f("%.0f", m.iterations), f("%.1f", m.seconds / 3600),
                              f("%.0f", m.cost), f("%.0f", m.iteration)});
  }
  out << "\nSpotlight (async: the same reserved GPUs + a spot pool following the trace, scaled to "
         "its peak; the bandit planner):\n\n";
  out << "| trace | spot GPUs (peak) | mean live explorers | reached | iterations | time to target "
         "(h) | speed-up vs none | vs sync | cost to target | cheaper vs none | vs sync | mean "
         "wait for seeds (s) | spot busy share | fallback prompts | preemptions | leases "
         "reclaimed | arms (N x S) |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& trace : o.traces) {
    report::Series trace_speedup{trace.name, {}}, trace_cheaper{trace.name, {}};
    for (int size : o.spot_sizes) {
      const Mean a = average(repeat(Mode::kAsync, o, &trace, size));
      trace_speedup.points.emplace_back(size, none.seconds / a.seconds);
      trace_cheaper.points.emplace_back(size, none.cost / a.cost);
      spotlight.rows.push_back(
          {trace.name, std::to_string(size), f("%.1f", a.live),
           std::to_string(a.reached) + "/" + std::to_string(a.runs), f("%.0f", a.iterations),
           f("%.1f", a.seconds / 3600), f("%.2fx", none.seconds / a.seconds),
           f("%.2fx", sync.seconds / a.seconds), f("%.0f", a.cost), f("%.2fx", none.cost / a.cost),
           f("%.2fx", sync.cost / a.cost), f("%.0f", a.wait), f("%.2f", a.busy),
           f("%.0f", a.fallback), f("%.0f", a.preemptions), f("%.0f", a.reclaimed),
           top_arms(a.arms)});
      out << "| " << trace.name << " | " << size << " | " << f("%.1f", a.live) << " | " << a.reached
          << "/" << a.runs << " | " << f("%.0f", a.iterations) << " | "
          << f("%.1f", a.seconds / 3600) << " | " << f("%.2fx", none.seconds / a.seconds) << " | "
          << f("%.2fx", sync.seconds / a.seconds) << " | " << f("%.0f", a.cost) << " | "
          << f("%.2fx", none.cost / a.cost) << " | " << f("%.2fx", sync.cost / a.cost) << " | "
          << f("%.0f", a.wait) << " | " << f("%.2f", a.busy) << " | " << f("%.0f", a.fallback)
          << " | " << f("%.0f", a.preemptions) << " | " << f("%.0f", a.reclaimed) << " | "
          << top_arms(a.arms) << " |\n";
    }
    speedup.series.push_back(trace_speedup);
    cheaper.series.push_back(trace_cheaper);
  }
  out << "\n";
  write_assumptions(out, o.sim);
  if (page) {
    std::ostringstream assumptions;
    write_assumptions(assumptions, o.sim);
    page->title = title.str();
    page->subtitle = "spotlight-sim: mean of " + std::to_string(o.seeds) + " seeds per cell";
    page->sections = {
        {"baselines", "Baselines (reserved GPUs only)", {baselines}},
        {"spotlight",
         "Spotlight (async, reserved + spot pool following each trace)",
         {speedup, cheaper, spotlight}},
        {"assumptions", "Assumptions", {report::Preformatted{assumptions.str(), ""}}}};
  }
}

void write_assumptions(std::ostream& out, const SimOptions& o) {
  const double t = o.seconds_per_sample_step;
  const double training = o.prompts * o.group_size * t *
                          (o.rollout_steps + o.train_cost_factor * o.trained_steps) /
                          o.reserved_gpus;
  out << "## Assumptions\n\n";
  if (const auto& m = o.measured_step_time) {
    out << "- Hardware " << o.hardware << ": t = " << o.seconds_per_sample_step
        << " s for one sample at one sampler step on one GPU, measured on " << m->device
        << " by scripts/gpu-check at " << m->when << " (" << m->source.filename().string()
        << "): " << m->basis
        << ". Measured, not the FLOP estimate (a Qwen-Image-like 20B MMDiT at 1024x1024, "
           "3.3e14 FLOP per step with CFG: 0.83 s on an H100, 0.74 s on an H200).\n";
  } else {
    out << "- Hardware " << o.hardware << ": t = " << o.seconds_per_sample_step
        << " s for one sample at one sampler step on one GPU (a Qwen-Image-like 20B MMDiT at "
           "1024x1024: 4096 image tokens; 2 x 20e9 x 4096 x 2 (CFG) = 3.3e14 FLOP per step; H100 "
           "SXM 989 TFLOP/s dense bf16 at 40% utilisation = 0.83 s; H200: the same peak at 45% "
           "(more HBM bandwidth) = 0.74 s). Estimated, not measured (no deploy/gpu/"
        << measured_file_name(o.hardware) << " from scripts/gpu-check).\n";
  }
  out << "- Trainer: " << o.reserved_gpus << " reserved GPUs; " << o.prompts
      << " prompts x G = " << o.group_size << " per iteration; rollouts " << o.rollout_steps
      << " SDE steps, " << o.trained_steps << " trained steps at " << o.train_cost_factor
      << "x a forward: " << f("%.0f", training)
      << " s of compute per iteration, data-parallel without overheads. sync adds exploration of "
      << o.sync_candidates << " candidates x " << o.sync_steps
      << " steps per prompt on the same GPUs.\n";
  out << "- Explorers: one GPU samples one candidate at a time (S x t seconds, +-10% jitter); a "
         "joining spot GPU starts after "
      << o.explorer_startup_seconds
      << " s (boot + weights); a preempted one dies without notice and its lease is handed back "
         "by the planner's reaper after "
      << o.dead_heartbeats << " missed heartbeats of " << o.heartbeat_seconds
      << " s. Pool size = trace value x pool / trace peak (the traces' gap_seconds in real time; "
         "each seed starts at its own offset and wraps).\n";
  out << "- Planner: the real BanditExplorationPolicy over N in {";
  for (std::size_t i = 0; i < o.bandit.candidates.size(); ++i)
    out << (i ? ", " : "") << o.bandit.candidates[i];
  out << "} x S in {";
  for (std::size_t i = 0; i < o.bandit.steps.size(); ++i)
    out << (i ? ", " : "") << o.bandit.steps[i];
  out << "}, time margin " << o.bandit.time_margin
      << " of the training time; lookahead 1 (iteration k+1 explored during k with weights k); "
         "the trainer waits at most "
      << o.max_wait_share
      << " x its training time for seeds, then falls back to random seeds per prompt with "
         "fewer than G results.\n";
  out << "- Learning model (the assumption everything rests on): prompt success probability "
         "p ~ Beta(kappa s, kappa (1-s)), kappa = "
      << o.kappa
      << ", s the current score; a seed's reward is Bernoulli(p); exploration sees it "
         "flipped with probability 0.5 exp(-S/"
      << o.steps_scale << ") (+" << o.stale_flip
      << " with one-version-stale weights); selection = rl::select_max_variance on what "
         "exploration saw; score s += eta x mean group signal x (s_max - s), the signal of a group "
         "being the std of the true rewards trained on (signal std) or 0.5 if they differ at all "
         "(signal informative); here signal = "
      << o.signal << ", eta = " << o.eta << ", s from " << o.base_score << " to the target "
      << o.target_score << " (s_max " << o.max_score
      << "). A group whose rewards are all alike contributes nothing (Flow-GRPO drops A = 0).\n";
  out << "- Cost: reserved " << o.reserved_price_per_hour << " per GPU-hour for the whole run; "
      << "spot " << o.spot_ratio
      << " x that for every spot GPU held (starting, busy or idle); none and sync hold no spot "
         "GPUs.\n";
  out << "- Reference (docs/architecture.md): about 4x sooner to the same score and 1.4-6.4x "
         "cheaper.\n";
}

}  // namespace spotlight::simulator
