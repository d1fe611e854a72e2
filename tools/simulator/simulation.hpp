#pragma once
// The task-level simulation of one post-training run: simulated explorers and trainer
// driving the real pieces, one seed task at a time:
//   - the planner's BanditExplorationPolicy (async) choosing (N, S) per iteration within the
//     predicted training time and the live explorer count;
//   - the lease queue contract (MemoryLeaseQueue: leases, results, reclaim, delivery limit) and
//     the planner's ExplorerReaper handing back the leases of explorers whose heartbeats stopped;
//   - the seed-task ids and SeedTask / SeedResult wire messages, and rl::select_max_variance.
// Explorers come and go with a spot availability trace scaled to the pool size (a preempted
// explorer dies without notice: its lease comes back through the reaper); a joining one starts
// after a start-up time. Rewards, observations and progress come from the learning model
// (learning_model.hpp), as in the cluster model (cluster_model.hpp), which simulates the same
// run with exploration as fluid work and decides the pool size: this one is its reference for
// what the real planner-side pieces do, at a cost per seed task that the cluster study cannot
// afford. Modes none, sync and async.
//
// Time: one sample at one sampler step on one GPU takes t; the trainer (R reserved GPUs) takes
//   rollout P*G*S_roll*t/R + train c*P*G*S_train*t/R per iteration (+ sync: exploration
//   P*N*S*t/R on the critical path; async: waiting for seeds, at most max_wait_share x the
//   training time); an explorer samples one candidate in S*t (+-10%).
// Cost: R reserved GPUs for the wall time + every spot GPU held (starting, busy or idle) at
//   spot_ratio x the reserved price.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/exploration/bandit_policy.hpp"
#include "tools/simulator/cluster_model.hpp"
#include "tools/simulator/learning_model.hpp"
#include "tools/simulator/step_costs.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {

// A wider grid than the services' default: a cluster pool can afford hundreds of candidates.
inline exploration::BanditOptions default_bandit() {
  exploration::BanditOptions b;
  b.candidates = {16, 32, 64, 128};
  b.steps = {4, 10};
  return b;
}

struct SimOptions {
  StepCosts costs = estimated_step_costs("H200");  // t, start-up, prices
  int reserved_gpus = 32;                          // R (trainer)
  int prompts = 32;                                // P
  int group_size = 16;                             // G
  int rollout_steps = 10;                          // S_roll (SDE rollouts)
  int trained_steps = 9;                           // S_train (all but the last)
  // sync exploration: a fixed arm on the trainer
  int sync_candidates = 32;
  int sync_steps = 10;
  // async exploration
  exploration::BanditOptions bandit = default_bandit();  // arms; group_size is set from group_size
  double max_wait_share = 0.25;  // the trainer waits at most this share of its training time
  double heartbeat_seconds = 10;
  int dead_heartbeats = 3;
  double lease_timeout_seconds = 600;
  LearningParams learning;
  double target_score = 0.80;  // of the learning model's expected score
  int max_iterations = 3000;
  std::uint64_t seed = 0;
  std::optional<double> trace_offset_seconds;  // where the trace starts; default: from the seed
};

struct SimResult {
  Mode mode = Mode::kNone;
  int spot_gpus = 0;
  bool reached = false;
  int iterations = 0;
  double seconds = 0;  // to target (or to max_iterations)
  double reserved_cost = 0, spot_cost = 0;
  double cost() const { return reserved_cost + spot_cost; }
  double mean_iteration_seconds = 0;
  double mean_wait_seconds = 0;    // async: waiting for seeds per iteration
  double mean_live_explorers = 0;  // at planning time
  double spot_busy_share = 0;      // of the spot GPU-seconds held
  int fallback_prompts = 0;
  std::int64_t tasks_done = 0, leases_reclaimed = 0, preemptions = 0;
  std::map<std::string, int> arms;  // "NxS" (or "0") -> iterations
};

// mode: none, sync or async (std::invalid_argument otherwise; async needs a trace).
SimResult simulate(Mode mode, const SimOptions& options, const Trace* trace, int spot_gpus);

}  // namespace spotlight::simulator
