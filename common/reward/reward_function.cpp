#include "common/reward/reward_function.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "common/task/score.hpp"

namespace spotlight::reward {

namespace {

// The shortest text that reads back as x ("1e+30", "-5", "nan").
std::string number(double x) {
  std::array<char, 32> buffer{};
  const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x).ptr;
  return std::string(buffer.data(), end);
}

}  // namespace

std::string to_string(const RewardRange& range) {
  return "[" + number(range.lo) + ", " + number(range.hi) + "]";
}

std::optional<RewardFault> reward_fault(double reward, const RewardRange& range) {
  if (!std::isfinite(reward)) {
    return RewardFault{"non_finite", "reward " + number(reward) + " is not finite"};
  }
  if (reward < range.lo || reward > range.hi) {
    return RewardFault{"out_of_range", "reward " + number(reward) +
                                           " is outside the declared range " + to_string(range)};
  }
  return std::nullopt;
}

namespace {

class TaskReward final : public RewardFunction {
 public:
  explicit TaskReward(const task::TaskOptions& options) : options_(options) {}

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
  RewardRange range() const override {
    double lo = 0.0, hi = 0.0;
    for (const auto& [weight, part] : parts_) {
      const RewardRange r = part->range();
      lo += std::min(weight * r.lo, weight * r.hi);
      hi += std::max(weight * r.lo, weight * r.hi);
    }
    // All weights 0: every reward is 0, which [0, 1] holds.
    return lo < hi ? RewardRange{lo, hi} : RewardRange{std::min(lo, 0.0), std::max(hi, 1.0)};
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

class CheckedReward final : public RewardFunction {
 public:
  explicit CheckedReward(std::unique_ptr<RewardFunction> inner) : inner_(std::move(inner)) {
    if (!inner_) throw std::invalid_argument("reward: checked reward of nothing");
  }
  std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                            const std::vector<task::Image>& images) override {
    auto scores = inner_->score(prompts, images);
    const RewardRange declared = inner_->range();
    for (const auto& s : scores) {
      if (auto fault = reward_fault(s.reward, declared)) {
        throw RewardFaultError(inner_->name(), *fault);
      }
    }
    return scores;
  }
  std::string name() const override { return inner_->name(); }
  RewardRange range() const override { return inner_->range(); }

 private:
  std::unique_ptr<RewardFunction> inner_;
};

}  // namespace

std::unique_ptr<RewardFunction> make_checked_reward(std::unique_ptr<RewardFunction> inner) {
  return std::make_unique<CheckedReward>(std::move(inner));
}

std::unique_ptr<RewardFunction> make_task_reward(const task::TaskOptions& options) {
  return std::make_unique<TaskReward>(options);
}

std::unique_ptr<RewardFunction> make_weighted_reward(
    std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts) {
  return std::make_unique<WeightedReward>(std::move(parts));
}

}  // namespace spotlight::reward
