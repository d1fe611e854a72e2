#pragma once
// Where the trainer's rollout seeds come from, one strategy per exploration.mode:
//   none  - G fresh random seeds per prompt (plain Flow-GRPO);
//   sync  - explore N candidates per prompt on the trainer with the current weights, on the
//           critical path, and keep the G of maximum reward variance;
//   async - read what the explorers found with the previous weights (services; see issue 3).
// All return, per prompt, G seeds in group order.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/policy/policy.hpp"
#include "common/reward/reward_function.hpp"
#include "common/sampler/sampler.hpp"

namespace spotlight::trainer {

struct SeedSelection {
  std::vector<std::vector<uint64_t>> seeds;            // [prompt][G]
  std::vector<std::vector<double>> candidate_rewards;  // [prompt][N] explored rewards (if any)
  std::vector<std::vector<uint64_t>> candidate_seeds;  // [prompt][N]
  double explore_seconds = 0.0;                        // time spent on the critical path
  double selected_variance = 0.0;                      // mean over prompts of the selected variance
  int fallback_prompts = 0;                            // prompts that fell back to random seeds
  // async: results that did not check out against their task and were quarantined, and tasks
  // given up for this iteration because of them (could not run again, or kept being poisoned).
  int quarantined_results = 0;
  int lost_tasks = 0;
};

class SeedSource {
 public:
  virtual ~SeedSource() = default;
  virtual SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) = 0;
};

struct ExplorationOptions {
  int group_size = 8;               // G
  int candidates = 24;              // N
  sampler::SamplerOptions sampler;  // exploration sampler (steps may be fewer than rollouts)
  int chunk = 32;
  uint64_t run_seed = 0;
};

std::unique_ptr<SeedSource> make_random_seed_source(const ExplorationOptions& options);
std::unique_ptr<SeedSource> make_sync_seed_source(const ExplorationOptions& options,
                                                  policy::Policy& policy,
                                                  reward::RewardFunction& reward);

}  // namespace spotlight::trainer
