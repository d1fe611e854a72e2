#pragma once
// Shared by the trainer's unit tests: a dense reward, small GRPO options on the micro preset, and
// a trainer over a perturbed policy with the seed source of its exploration mode.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "common/policy/policy.hpp"
#include "common/reward/reward_function.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer::testing {

// A dense reward for logic tests: brightness of the red channel, so every group has spread.
class RedReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>&,
                                    const std::vector<task::Image>& images) override {
    std::vector<reward::Scored> out;
    for (const auto& image : images) {
      double sum = 0;
      for (size_t i = 0; i < image.rgb.size(); i += 3)
        sum += image.rgb[i];
      out.push_back({sum / (image.rgb.size() / 3), false});
    }
    return out;
  }
  std::string name() const override { return "red"; }
};

inline std::filesystem::path temp_dir() {
  char tmpl[] = "/tmp/spotlight-trainer-XXXXXX";
  return mkdtemp(tmpl);
}

// Adds N(0, 0.02^2) noise drawn from `seed` to every parameter.
inline void perturb(policy::Policy& p, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& w : p.model()->parameters())
    w.add_(torch::randn_like(w) * 0.02);
}

inline policy::PolicyOptions micro() {
  return policy::PolicyOptions{"micro", "cpu", "float32", 1};
}

inline GrpoOptions small_options(const std::string& mode) {
  GrpoOptions o;
  o.mode = config::parse_choice(run::kExplorationModes, "exploration.mode", mode);
  o.iterations = 2;
  o.prompts_per_iteration = 2;
  o.group_size = 4;
  o.candidates = 6;
  o.sampler.steps = 4;
  o.micro_batch = 4;
  o.micro_batches_per_update = 1;
  o.lr = 1e-3;
  o.loss.clip_range = 0.2;
  o.validation_prompts = 5;
  o.validation_steps = 3;
  o.validate_every = 100;
  o.audit_every = 1;
  o.audit_prompts = 2;
  o.seed = 9;
  return o;
}

// Exploration options matching `o`; exploration chunks of 8 (rollout micro-batches are 4: the
// batch compositions differ).
inline ExplorationOptions exploration_options(const GrpoOptions& o, run::Reuse reuse) {
  ExplorationOptions e;
  e.group_size = o.group_size;
  e.candidates = o.candidates;
  e.sampler = o.sampler;
  e.chunk = 8;
  e.run_seed = o.seed;
  e.reuse = reuse;
  e.rollout_steps = o.sampler.steps;
  e.window = rollout::trained_steps(o.sampler.steps, o.train_step_begin, o.train_step_end);
  return e;
}

struct Fixture {
  explicit Fixture(const GrpoOptions& o, policy::Policy* reference = nullptr,
                   run::Reuse reuse = run::Reuse::kOnPolicy)
      : policy(micro()) {
    perturb(policy, 4);
    const auto e = exploration_options(o, reuse);
    std::unique_ptr<SeedSource> seeds;
    if (o.mode == run::ExplorationMode::kSync) {
      seeds = make_sync_seed_source(e, policy, reward);
    } else if (o.mode == run::ExplorationMode::kSyncStale) {
      seeds = make_sync_stale_seed_source(e, policy, reward);
    } else {
      seeds = make_random_seed_source(e);
    }
    trainer = std::make_unique<GrpoTrainer>(o, policy, reward, std::move(seeds), reference);
  }
  RedReward reward;
  policy::Policy policy;
  std::unique_ptr<GrpoTrainer> trainer;
};

}  // namespace spotlight::trainer::testing
