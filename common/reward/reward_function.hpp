#pragma once
// A reward function scores a batch of images against their prompts. Implementations: the
// embedded task's rule-based scorer, a weighted sum of several functions, and (in the services)
// a client of the reward service. Thread-compatible: one caller at a time per instance.
//
// Every reward function has a declared range: a reward outside it, or not finite, is a fault of
// the function (a bug, a misconfigured or hostile reward service), never something to train on.
// Callers check each reward with reward_fault() and refuse the sample.

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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

// The closed interval [lo, hi] rewards must lie in; lo < hi, both finite.
struct RewardRange {
  double lo = 0.0;
  double hi = 1.0;
  bool operator==(const RewardRange&) const = default;
};
// The embedded task's rewards: partial credit in [0, 1].
inline constexpr RewardRange kUnitRewardRange{0.0, 1.0};

// "[lo, hi]" with the shortest round-tripping digits.
std::string to_string(const RewardRange& range);

// Why a reward is refused.
struct RewardFault {
  std::string_view reason;  // "non_finite" or "out_of_range" (metric label)
  std::string message;      // e.g. "reward 1e+30 is outside the declared range [0, 1]"
};
// std::nullopt when `reward` is finite and in `range`.
std::optional<RewardFault> reward_fault(double reward, const RewardRange& range);

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  // prompts.size() == images.size(); returns one Scored per image, in order.
  virtual std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>& images) = 0;
  virtual std::string name() const = 0;
  // The range every reward of score() lies in (see above). A remote function returns the range
  // its service declared in its latest reply, so ask after score().
  virtual RewardRange range() const { return kUnitRewardRange; }
};

// The embedded task's rule-based scorer (count, colour, position; OCR edit distance).
std::unique_ptr<RewardFunction> make_task_reward(const task::TaskOptions& options);

// A reward the function should not have given (see reward_fault()).
class RewardFaultError : public std::runtime_error {
 public:
  RewardFaultError(const std::string& function, const RewardFault& fault)
      : std::runtime_error("reward fault (" + std::string(fault.reason) + "): " + function + ": " +
                           fault.message),
        reason_(fault.reason) {}
  std::string_view reason() const { return reason_; }

 private:
  std::string_view reason_;
};

// `inner`, whose score() throws RewardFaultError for the first reward that is not finite or lies
// outside inner->range() (for callers that cannot refuse one sample alone, e.g. the trainer).
std::unique_ptr<RewardFunction> make_checked_reward(std::unique_ptr<RewardFunction> inner);

// sum_i weight_i * reward_i; `correct` is the logical and of the parts.
std::unique_ptr<RewardFunction> make_weighted_reward(
    std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts);

}  // namespace spotlight::reward
