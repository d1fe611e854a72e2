#pragma once
// A discrete-event simulation of one post-training run at cluster scale (issue #5), driving the
// real pieces with simulated explorers and trainer:
//   - the planner's BanditExplorationPolicy (async) choosing (N, S) per iteration within the
//     predicted training time and the live explorer count;
//   - the lease queue contract (MemoryLeaseQueue: leases, results, reclaim, delivery limit) and
//     the planner's ExplorerReaper handing back the leases of explorers whose heartbeats stopped;
//   - the seed-task ids and SeedTask / SeedResult wire messages, and rl::select_max_variance.
// Explorers come and go with a spot availability trace (a preempted explorer dies without
// notice: its lease comes back through the reaper); a joining one starts after a start-up time.
//
// Model (every number is a SimOptions field; write_assumptions() prints them):
//   time of one sample at one sampler step on one GPU: t (hardware)
//   trainer (R reserved GPUs), one iteration: rollout P*G*S_roll*t/R + train c*P*G*S_train*t/R
//     (+ sync: exploration P*N*S*t/R on the critical path; async: waiting for seeds, at most
//      max_wait_share x the training time)
//   explorer: one task (one candidate seed sampled with S steps and scored) takes S*t
//   reward: prompt i of iteration k succeeds with probability p_i ~ Beta(kappa*s_k,
//     kappa*(1-s_k)), s_k the current score; a seed's reward is Bernoulli(p_i) (GenEval-like:
//     correct or not). Exploration sees that reward flipped with probability
//     flip(S) = 0.5*exp(-S/steps_scale) (+ stale_flip in async: one version old weights).
//   learning: s_{k+1} = s_k + eta * mean_i signal_i * (s_max - s_k), signal_i = std of the true
//     rewards of the G trained seeds of prompt i (or 0.5 * [they differ], signal "informative"):
//     a group whose rewards are all alike teaches nothing.
//   cost: R reserved GPUs for the wall time + every spot GPU held (starting, busy or idle) at
//     spot_ratio x the reserved price.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/exploration/bandit_policy.hpp"
#include "tools/simulator/measured_step_time.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {

enum class Mode { kNone, kSync, kAsync };
const char* to_string(Mode mode);

// A wider grid than the services' default: a cluster pool can afford hundreds of candidates.
inline exploration::BanditOptions default_bandit() {
  exploration::BanditOptions b;
  b.candidates = {16, 32, 64, 128};
  b.steps = {4, 10};
  return b;
}

struct SimOptions {
  std::string hardware = "H100";
  double seconds_per_sample_step = 0.83;  // t: the FLOP estimate (write_assumptions derives it)
  // Set when t comes from a GPU measurement (scripts/gpu-check) instead of the estimate.
  std::optional<MeasuredStepTime> measured_step_time;
  int reserved_gpus = 32;          // R (trainer)
  int prompts = 32;                // P
  int group_size = 16;             // G
  int rollout_steps = 10;          // S_roll (SDE rollouts)
  int trained_steps = 9;           // S_train (all but the last)
  double train_cost_factor = 3.0;  // forward + backward of a trained step / forward
  // sync exploration: a fixed arm on the trainer
  int sync_candidates = 32;
  int sync_steps = 10;
  // async exploration
  exploration::BanditOptions bandit = default_bandit();  // arms; group_size is set from group_size
  double max_wait_share = 0.25;  // the trainer waits at most this share of its training time
  double explorer_startup_seconds = 120;  // boot + weights of a joining spot GPU
  double heartbeat_seconds = 10;
  int dead_heartbeats = 3;
  double lease_timeout_seconds = 600;
  // learning model
  double base_score = 0.45;
  double target_score = 0.80;
  double max_score = 0.95;
  double eta = 0.04;
  // What a trained group contributes: "std" (its reward std) or "informative" (0.5 if its rewards
  // differ at all, else 0: with std-normalised advantages any mixed group gives a full update).
  std::string signal = "std";
  double kappa = 2.0;
  double steps_scale = 3.0;
  double stale_flip = 0.03;
  int max_iterations = 3000;
  // prices
  double reserved_price_per_hour = 4.0;
  double spot_ratio = 0.27;
  std::uint64_t seed = 0;
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

SimResult simulate(Mode mode, const SimOptions& options, const Trace* trace, int spot_gpus);

void write_assumptions(std::ostream& out, const SimOptions& options);

}  // namespace spotlight::simulator
