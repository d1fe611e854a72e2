#pragma once
// A reward function scores a batch of images against their prompts. Implementations: the
// embedded task's rule-based scorer, a weighted sum of several functions, and (in the services)
// a client of the reward service. Thread-compatible: one caller at a time per instance.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::reward {

struct Scored {
  double reward = 0.0;   // what RL maximises
  bool correct = false;  // strict GenEval-style correctness (validation score)
  // Named parts of `reward`, when the function reports them (a reward service may).
  std::vector<std::pair<std::string, double>> components;
};

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  // prompts.size() == images.size(); returns one Scored per image, in order.
  virtual std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>& images) = 0;
  virtual std::string name() const = 0;
};

// The embedded task's rule-based scorer (count, colour, position; OCR edit distance).
std::unique_ptr<RewardFunction> make_task_reward(const task::TaskOptions& options);

// sum_i weight_i * reward_i; `correct` is the logical and of the parts.
std::unique_ptr<RewardFunction> make_weighted_reward(
    std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts);

}  // namespace spotlight::reward
