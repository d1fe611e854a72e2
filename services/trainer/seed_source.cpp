#include "services/trainer/seed_source.hpp"

#include <chrono>

#include "common/rl/selection.hpp"
#include "common/run/schedule.hpp"

namespace spotlight::trainer {

namespace {

class RandomSeedSource final : public SeedSource {
 public:
  explicit RandomSeedSource(ExplorationOptions o) : o_(std::move(o)) {}
  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override {
    SeedSelection out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::vector<uint64_t> group;
      for (int j = 0; j < o_.group_size; ++j) {
        group.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
      }
      out.seeds.push_back(std::move(group));
    }
    return out;
  }

 private:
  ExplorationOptions o_;
};

class SyncSeedSource final : public SeedSource {
 public:
  SyncSeedSource(ExplorationOptions o, policy::Policy& policy, reward::RewardFunction& reward)
      : o_(std::move(o)), policy_(policy), reward_(reward) {}

  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<task::Prompt> all_prompts;
    std::vector<uint64_t> all_seeds;
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (int j = 0; j < o_.candidates; ++j) {
        all_prompts.push_back(prompts[i]);
        all_seeds.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
      }
    }
    auto sampler_options = o_.sampler;
    sampler_options.keep_trajectory = false;
    const auto images = policy_.final_reward_inputs(
        policy_.sample(all_prompts, all_seeds, sampler_options, o_.chunk));
    const auto scores = reward_.score(all_prompts, images);
    SeedSelection out;
    double variance_sum = 0.0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::vector<double> rewards;
      std::vector<uint64_t> seeds;
      for (int j = 0; j < o_.candidates; ++j) {
        rewards.push_back(scores[i * o_.candidates + j].reward);
        seeds.push_back(all_seeds[i * o_.candidates + j]);
      }
      std::vector<uint64_t> chosen;
      std::vector<double> chosen_rewards;
      for (size_t index : rl::select_max_variance(rewards, o_.group_size)) {
        chosen.push_back(seeds[index]);
        chosen_rewards.push_back(rewards[index]);
      }
      variance_sum += rl::variance(chosen_rewards);
      out.seeds.push_back(std::move(chosen));
      out.candidate_rewards.push_back(std::move(rewards));
      out.candidate_seeds.push_back(std::move(seeds));
    }
    out.selected_variance =
        prompts.empty() ? 0.0 : variance_sum / static_cast<double>(prompts.size());
    out.explore_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

 private:
  ExplorationOptions o_;
  policy::Policy& policy_;
  reward::RewardFunction& reward_;
};

}  // namespace

std::unique_ptr<SeedSource> make_random_seed_source(const ExplorationOptions& options) {
  return std::make_unique<RandomSeedSource>(options);
}

std::unique_ptr<SeedSource> make_sync_seed_source(const ExplorationOptions& options,
                                                  policy::Policy& policy,
                                                  reward::RewardFunction& reward) {
  return std::make_unique<SyncSeedSource>(options, policy, reward);
}

}  // namespace spotlight::trainer
