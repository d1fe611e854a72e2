#pragma once
// Where the trainer's rollout seeds come from, one strategy per exploration.mode:
//   none       - G fresh random seeds per prompt (plain Flow-GRPO);
//   sync       - explore N candidates per prompt on the trainer with the current weights, on the
//                critical path, and keep the G of maximum reward variance;
//   sync-stale - as sync, but explore with the previous iteration's weights (in-process), which
//                isolates the effect of staleness on learning from the effect of placement;
//   async      - read what the explorers found with the previous weights (async_exploration.hpp);
//   offload    - read the rollouts the explorers sampled with the current weights (ditto).
// All return, per prompt, G seeds in group order, and the rollouts of those seeds that
// exploration already sampled with the rollout's step count (exploration.reuse): the trainer
// trains on those instead of sampling them again.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/policy/policy.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rollout/rollout.hpp"
#include "common/run/run_config.hpp"
#include "common/sampler/sampler.hpp"

namespace spotlight::trainer {

struct SeedSelection {
  std::vector<std::vector<uint64_t>> seeds;            // [prompt][G]
  std::vector<std::vector<double>> candidate_rewards;  // [prompt][N] explored rewards (if any)
  std::vector<std::vector<uint64_t>> candidate_seeds;  // [prompt][N]
  // [prompt][G] (or empty): the rollout of a chosen seed that exploration already sampled, with
  // its reward; nullopt: the trainer samples it with the current weights.
  std::vector<std::vector<std::optional<rollout::Rollout>>> rollouts;
  double explore_seconds = 0.0;    // time spent on the critical path
  double selected_variance = 0.0;  // mean over prompts of the selected variance
  int fallback_prompts = 0;        // prompts that fell back to random seeds
  // Exploration on the trainer (sync, sync-stale): the weights version it sampled with, and its
  // sampler steps (samples x steps); -1 / 0 elsewhere.
  std::int64_t explore_weights_version = -1;
  std::int64_t explore_sampler_steps = 0;
  // Kept trajectories of chosen seeds that were not usable: by rollout::to_string(Rejection),
  // and "missing" for a result without its trajectory.
  std::map<std::string, int> rejected_trajectories;
  // async: results that did not check out against their task and were quarantined, and tasks
  // given up for this iteration because of them (could not run again, or kept being poisoned).
  int quarantined_results = 0;
  int lost_tasks = 0;
  // async: tasks the queue dead-lettered (rejected, or failed or expired past max_deliveries),
  // lost for this iteration; not waited for.
  int dead_lettered_tasks = 0;
};

class SeedSource {
 public:
  virtual ~SeedSource() = default;
  virtual SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) = 0;

  // What select() needs across a restart: files (plain name -> bytes) saved in the checkpoint of
  // iteration k with the trainer's own, and handed back from the checkpoint a resume loads (files
  // of other sources included: take only your own). Default: none.
  virtual std::map<std::string, std::string> checkpoint_files() { return {}; }
  virtual void restore(const std::map<std::string, std::string>& files) {}
  // Iteration `iteration` is trained and checkpointed: what was kept for it may be dropped.
  virtual void iteration_done(int64_t iteration) {}
};

struct ExplorationOptions {
  int group_size = 8;               // G
  int candidates = 24;              // N
  sampler::SamplerOptions sampler;  // exploration sampler (steps may be fewer than rollouts)
  int chunk = 32;
  uint64_t run_seed = 0;
  // Reuse: explored seeds become rollouts when the exploration sampler is the rollout sampler
  // (same steps) and the weights allow it (on_policy: the current ones; off_policy: any).
  run::Reuse reuse = run::Reuse::kOnPolicy;
  int rollout_steps = 10;            // the rollout sampler's steps
  rollout::StepWindow window{0, 9};  // the trained steps of a rollout
};

std::unique_ptr<SeedSource> make_random_seed_source(const ExplorationOptions& options);
std::unique_ptr<SeedSource> make_sync_seed_source(const ExplorationOptions& options,
                                                  policy::Policy& policy,
                                                  reward::RewardFunction& reward);
// sync-stale: explores iteration k with the weights `policy` held when iteration k-1 started
// (k = 0, and the first iteration after a resume from a checkpoint without them: the current
// weights); keeps a second copy of the model for them, saved with every checkpoint.
std::unique_ptr<SeedSource> make_sync_stale_seed_source(const ExplorationOptions& options,
                                                        policy::Policy& policy,
                                                        reward::RewardFunction& reward);

}  // namespace spotlight::trainer
