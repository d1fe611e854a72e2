#pragma once
// A post-training run at cluster scale, simulated iteration by iteration, for every baseline on
// the same footing: R reserved GPUs train; where a mode uses spot GPUs, the simulator decides how
// many to hold (at most spot_ratio x R, at most what the availability trace offers) and pays for
// every one it holds. The learning model (learning_model.hpp) says what each iteration's groups
// do to the score; this file only says what they cost in time and money.
//
// Per-iteration compute on the reserved GPUs (t: StepCosts::seconds_per_sample_step):
//   rollout  P G S_roll t / R        train  c P G S_train t / R        (c: train_cost_factor)
// Modes:
//   none          rollout + train on R reserved GPUs, random seeds
//   none-matched  none on R' = R + spot_price_ratio x (the spot GPUs the compared run held), at
//                 data-parallel efficiency dp_efficiency(R'/R): the same money as reserved GPUs
//   offload       the paper's baseline: rollouts of the current weights on the spot pool, then
//                 training on the reserved GPUs; each waits for the other. The pool is sized like
//                 async's (what finishes P G S_roll t within time_margin x the training time, at
//                 most the offer); with no spot GPU held the reserved GPUs roll out themselves.
//   offload-pipelined  one step off: the pool rolls out iteration k+1 with weights k while the
//                 reserved GPUs train k (trajectories one version old, trained at
//                 offpolicy_efficiency); the trainer waits for them, or rolls them out itself when
//                 the pool is empty
//   sync          exploration of P N S candidates on the reserved GPUs, on the critical path
//   async         Spotlight: the spot pool explores iteration k+1 with weights k while the reserved
//                 GPUs train k; the trainer waits at most max_wait_share x its compute for them,
//                 then prompts with fewer than G explored candidates use random seeds. It pays
//                 the measured overheads (StepCosts): at least async_wait_share x its compute
//                 waiting, async_audit_share x its compute auditing, and a weight publish
//   async-reuse   async whose explorers sample whole rollouts (S = S_roll) with weights k and keep
//                 the trajectories: the trainer trains on the selected ones directly (off-policy by
//                 one version) and rolls out only the prompts that came back short
// Spot pool (fluid: work is GPU-seconds drained by the ready GPUs, first planned first done):
//   need       = ceil(P N S t / (time_margin x the trainer's compute it runs beside)) for the
//                 largest arm (N, S) the planner may choose (or the fixed arm)
//   held       <= min(offer(t), spot_ratio x R, need); a joining GPU is billed at once and works
//                 after explorer_startup_seconds; offer(t) = the trace's share of its peak x
//                 spot_ratio x R
//   preemption when the offer drops below what is held: the newest GPUs go first, a busy one
//                 loses the half-done task on average (a uniform share of one task's work)
//   idle       when the queue is empty and the next plan is further away than start-up +
//                 min_idle_seconds, idle GPUs are released and re-acquired start-up seconds
//                 before it; tasks of an iteration the trainer has started are purged
// The arm (N, S) of async is the planner's real BanditExplorationPolicy over the GPUs ready when
// it plans (nothing explored while none is), or a fixed arm.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/exploration/bandit_policy.hpp"
#include "tools/simulator/learning_model.hpp"
#include "tools/simulator/step_costs.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {

enum class Mode {
  kNone,
  kNoneMatched,
  kOffload,
  kOffloadPipelined,
  kSync,
  kSyncStale,
  kAsync,
  kAsyncReuse
};
const char* to_string(Mode mode);
Mode parse_mode(const std::string& name);  // throws std::invalid_argument
bool uses_spot(Mode mode);

struct ClusterOptions {
  StepCosts costs;
  int reserved_gpus = 32;   // R
  double spot_ratio = 1.0;  // the spot pool may hold up to spot_ratio x R GPUs
  int prompts = 48;         // P
  int group_size = 24;      // G
  int rollout_steps = 10;   // S_roll
  int trained_steps = 9;    // S_train
  // sync (and sync-stale): a fixed arm on the reserved GPUs
  int sync_candidates = 64;
  int sync_steps = 10;
  // async: the bandit over these arms, or a fixed arm when fixed_candidates > 0
  exploration::BanditOptions bandit;
  int fixed_candidates = 0;
  int fixed_steps = 0;
  double max_wait_share = 0.25;
  double min_idle_seconds = 60;
  // none-matched: the spot GPUs held on average by the run it is matched to
  double matched_spot_gpus = 0;
  // stop: the target score (learning model's expected score), or after fixed_iterations
  double target_score = 0.95;
  int max_iterations = 20000;
  std::optional<int> fixed_iterations;
  LearningParams learning;
  std::uint64_t seed = 0;
  double trace_offset_seconds = 0;
};

struct ClusterResult {
  Mode mode = Mode::kNone;
  bool reached = false;
  int iterations = 0;
  double seconds = 0;
  double reserved_cost = 0, spot_cost = 0;
  double cost() const { return reserved_cost + spot_cost; }
  double final_score = 0;
  double mean_held_spot = 0;     // spot GPUs held, time-averaged
  double spot_busy_share = 0;    // of the spot GPU-seconds held
  double mean_wait_seconds = 0;  // trainer waiting for explored seeds or spot rollouts
  int fallback_prompts = 0;
  int preemptions = 0;
  double lost_gpu_seconds = 0;      // work lost to preemption
  double mean_informative = 0;      // informative samples per iteration
  std::map<std::string, int> arms;  // "NxS" -> iterations
};

ClusterResult simulate_cluster(Mode mode, const ClusterOptions& options, const Trace* trace);

// Compute seconds of one iteration on the reserved GPUs without exploration (rollout + train).
double training_seconds(const ClusterOptions& options, double gpus);
double rollout_seconds(const ClusterOptions& options, double gpus);

}  // namespace spotlight::simulator
