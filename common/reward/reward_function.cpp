#include "common/reward/reward_function.hpp"

#include <stdexcept>

#include "common/task/score.hpp"

namespace spotlight::reward {
namespace {

class TaskReward final : public RewardFunction {
 public:
  explicit TaskReward(task::TaskOptions options) : options_(std::move(options)) {}

  std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                            const std::vector<task::Image>& images) override {
    if (prompts.size() != images.size()) {
      throw std::invalid_argument("reward: prompts and images differ in count");
    }
    std::vector<Scored> out(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto s = task::score(prompts[i], images[i], options_);
      out[i] = Scored{s.reward, s.correct};
    }
    return out;
  }
  std::string name() const override { return "task"; }

 private:
  task::TaskOptions options_;
};

class WeightedReward final : public RewardFunction {
 public:
  explicit WeightedReward(std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts)
      : parts_(std::move(parts)) {
    if (parts_.empty()) throw std::invalid_argument("reward: a weighted reward needs a part");
  }

  std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                            const std::vector<task::Image>& images) override {
    std::vector<Scored> total(prompts.size(), Scored{0.0, true});
    for (auto& [weight, part] : parts_) {
      const auto scores = part->score(prompts, images);
      for (size_t i = 0; i < total.size(); ++i) {
        total[i].reward += weight * scores[i].reward;
        total[i].correct = total[i].correct && scores[i].correct;
      }
    }
    return total;
  }
  std::string name() const override {
    std::string n = "weighted(";
    for (size_t i = 0; i < parts_.size(); ++i)
      n += (i ? "," : "") + parts_[i].second->name();
    return n + ")";
  }

 private:
  std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts_;
};

}  // namespace

std::unique_ptr<RewardFunction> make_task_reward(const task::TaskOptions& options) {
  return std::make_unique<TaskReward>(options);
}

std::unique_ptr<RewardFunction> make_weighted_reward(
    std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts) {
  return std::make_unique<WeightedReward>(std::move(parts));
}

}  // namespace spotlight::reward
