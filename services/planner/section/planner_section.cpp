#include "services/planner/section/planner_section.hpp"

#include <algorithm>
#include <vector>

namespace spotlight::planner {

using config::Entry;

namespace {

bool whole_numbers_at_least(const config::Value& value, double lo) {
  const auto& v = std::get<std::vector<double>>(value);
  return !v.empty() && std::all_of(v.begin(), v.end(), [&](double x) {
    return x >= lo && x == static_cast<double>(static_cast<long long>(x));
  });
}

}  // namespace

const config::Schema& planner_schema() {
  static const config::Schema schema{
      Entry::integer("planner.lookahead", 1, "Iterations explored ahead of the trainer.")
          .range(1, 100),
      Entry::integer("planner.poll_ms", 100, "Planner loop period.").range(1, 600000),
      Entry::boolean("planner.reap_dead_explorers", true,
                     "Hand back the leases of explorers whose heartbeats stopped at once "
                     "(else they wait for exploration.lease_timeout_ms)."),
      Entry::boolean("planner.purge_passed", true,
                     "Remove the waiting seed tasks of iterations the trainer has passed (counted "
                     "as purged, not lost); false: they stay queued and run (the old behaviour)."),
      Entry::real("planner.finish_probability", 0.9,
                  "deadline: the probability the chosen exploration must finish in time; also "
                  "what spotlight_planner_desired_explorers is sized for.")
          .check("must be in (0, 1)",
                 [](const config::Value& v) {
                   const double p = std::get<double>(v);
                   return p > 0 && p < 1;
                 }),
      Entry::real("planner.preemption_delay_seconds", 1.0,
                  "Finish-time model: how long a preempted sample waits for a new explorer.")
          .at_least(0),
      Entry::double_list("planner.candidates", {8, 16, 24, 32},
                         "bandit, deadline: candidates-per-prompt (N) arms.")
          .check("must be integers >= 1",
                 [](const config::Value& v) { return whole_numbers_at_least(v, 1); }),
      Entry::double_list("planner.steps", {4, 6, 10},
                         "bandit, deadline: exploration sampler-step arms.")
          .check("must be integers >= 2",
                 [](const config::Value& v) { return whole_numbers_at_least(v, 2); }),
      Entry::real("planner.time_margin", 0.9,
                  "bandit: an arm is feasible if its predicted exploration time is at most this "
                  "share of the trainer's predicted training time.")
          .positive(),
      Entry::real("planner.ucb_exploration", 0.5, "bandit: UCB exploration width c.").at_least(0),
      Entry::real("planner.ucb_discount", 0.95,
                  "bandit: per-observation decay of the arm statistics (1: plain UCB1).")
          .range(0.01, 1),
      Entry::real("planner.prior_sample_step_seconds", 0,
                  "bandit: seconds per sample per sampler step before any measurement (0: probe "
                  "with the cheapest arm).")
          .at_least(0),
      Entry::string("planner.decisions_file", "",
                    "JSONL of every plan and its reason (default: <run.dir>/planner.jsonl)."),
  };
  return schema;
}

}  // namespace spotlight::planner
