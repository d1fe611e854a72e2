#include "services/trainer/seed_source.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "common/log/log.hpp"
#include "common/model/safetensors.hpp"
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

// sync and sync-stale: explores on the trainer, with the current weights or with a copy of the
// previous iteration's.
class SyncSeedSource final : public SeedSource {
 public:
  SyncSeedSource(ExplorationOptions o, policy::Policy& policy, reward::RewardFunction& reward,
                 bool stale)
      : o_(std::move(o)), policy_(policy), reward_(reward) {
    if (stale) {
      previous_ = std::make_unique<policy::Policy>(policy.options(), policy.task_options());
    }
  }

  SeedSelection select(int64_t iteration, const std::vector<task::Prompt>& prompts) override {
    const auto start = std::chrono::steady_clock::now();
    // The weights to explore with: the current ones (sync), or the previous iteration's.
    policy::Policy* explorer = &policy_;
    std::int64_t version = iteration;
    if (previous_) {
      if (!previous_version_) {
        if (iteration > 0) {
          SPOTLIGHT_LOG(warn) << "sync-stale: no weights of iteration " << iteration - 1
                              << " to explore with; iteration " << iteration
                              << " explores with the current ones";
        }
        previous_->copy_weights_from(policy_);
        previous_version_ = iteration;
      }
      explorer = previous_.get();
      version = *previous_version_;
    }
    std::vector<task::Prompt> all_prompts;
    std::vector<uint64_t> all_seeds;
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (int j = 0; j < o_.candidates; ++j) {
        all_prompts.push_back(prompts[i]);
        all_seeds.push_back(run::candidate_seed(o_.run_seed, iteration, static_cast<int>(i), j));
      }
    }
    // An explored candidate is the rollout when it ran the rollout's steps (same seed, same
    // noise stream) with weights the reuse setting accepts.
    const bool same_sampler = o_.sampler.steps == o_.rollout_steps && o_.window.size() > 0;
    const bool reuse =
        same_sampler && (o_.reuse == run::Reuse::kOffPolicy ||
                         (o_.reuse == run::Reuse::kOnPolicy && version == iteration));
    auto sampler_options = o_.sampler;
    sampler_options.sde = true;
    sampler_options.keep_trajectory = reuse;
    const auto chunks = explorer->sample(all_prompts, all_seeds, sampler_options, o_.chunk);
    const auto images = explorer->final_reward_inputs(chunks);
    const auto scores = reward_.score(all_prompts, images);
    std::vector<rollout::Rollout> explored;
    if (reuse) {
      for (const auto& chunk : chunks) {
        for (auto& r : rollout::split(chunk, o_.window, version))
          explored.push_back(std::move(r));
      }
    }
    SeedSelection out;
    out.explore_weights_version = version;
    out.explore_sampler_steps = static_cast<std::int64_t>(all_seeds.size()) * o_.sampler.steps;
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
      std::vector<std::optional<rollout::Rollout>> rollouts;
      for (size_t index : rl::select_max_variance(rewards, o_.group_size)) {
        chosen.push_back(seeds[index]);
        chosen_rewards.push_back(rewards[index]);
        if (reuse) {
          rollout::Rollout r = std::move(explored[i * o_.candidates + index]);
          r.reward = rewards[index];
          r.correct = scores[i * o_.candidates + index].correct;
          rollouts.push_back(std::move(r));
        }
      }
      variance_sum += rl::variance(chosen_rewards);
      out.seeds.push_back(std::move(chosen));
      if (reuse) out.rollouts.push_back(std::move(rollouts));
      out.candidate_rewards.push_back(std::move(rewards));
      out.candidate_seeds.push_back(std::move(seeds));
    }
    out.selected_variance =
        prompts.empty() ? 0.0 : variance_sum / static_cast<double>(prompts.size());
    if (previous_) {
      // Iteration k+1 explores with the weights iteration k starts from.
      previous_->copy_weights_from(policy_);
      previous_version_ = iteration;
    }
    out.explore_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

  std::map<std::string, std::string> checkpoint_files() override {
    if (!previous_ || !previous_version_) return {};
    return {{kPreviousWeights, model::encode_safetensors(previous_->state())},
            {kPreviousState, nlohmann::json{{"version", *previous_version_}}.dump()}};
  }

  void restore(const std::map<std::string, std::string>& files) override {
    if (!previous_) return;
    const auto weights = files.find(kPreviousWeights);
    const auto state = files.find(kPreviousState);
    if (weights == files.end() || state == files.end()) {
      return;  // select() explores with the current weights once, and says so
    }
    previous_->load_state(model::decode_safetensors(weights->second));
    previous_version_ = nlohmann::json::parse(state->second).at("version").get<std::int64_t>();
  }

 private:
  static constexpr const char* kPreviousWeights = "explore-weights.safetensors";
  static constexpr const char* kPreviousState = "explore-weights.json";

  ExplorationOptions o_;
  policy::Policy& policy_;
  reward::RewardFunction& reward_;
  std::unique_ptr<policy::Policy> previous_;      // sync-stale only
  std::optional<std::int64_t> previous_version_;  // the version previous_ holds
};

}  // namespace

std::unique_ptr<SeedSource> make_random_seed_source(const ExplorationOptions& options) {
  return std::make_unique<RandomSeedSource>(options);
}

std::unique_ptr<SeedSource> make_sync_seed_source(const ExplorationOptions& options,
                                                  policy::Policy& policy,
                                                  reward::RewardFunction& reward) {
  return std::make_unique<SyncSeedSource>(options, policy, reward, /*stale=*/false);
}

std::unique_ptr<SeedSource> make_sync_stale_seed_source(const ExplorationOptions& options,
                                                        policy::Policy& policy,
                                                        reward::RewardFunction& reward) {
  return std::make_unique<SyncSeedSource>(options, policy, reward, /*stale=*/true);
}

}  // namespace spotlight::trainer
