#include "common/exploration/bandit_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace spotlight::exploration {
namespace {

void require(bool ok, const std::string& field, const std::string& why) {
  if (!ok) throw std::invalid_argument("BanditOptions." + field + ": " + why);
}

double cost_of(const ExplorationDecision& arm) {
  return static_cast<double>(arm.candidates) * static_cast<double>(arm.steps);
}

}  // namespace

void BanditOptions::validate() const {
  require(!candidates.empty(), "candidates", "must not be empty");
  require(std::all_of(candidates.begin(), candidates.end(), [](int n) { return n >= 1; }),
          "candidates", "every N must be >= 1");
  require(!steps.empty(), "steps", "must not be empty");
  require(std::all_of(steps.begin(), steps.end(), [](int s) { return s >= 2; }), "steps",
          "every S must be >= 2");
  require(group_size >= 1, "group_size", "must be >= 1");
  require(std::any_of(candidates.begin(), candidates.end(), [&](int n) { return n >= group_size; }),
          "candidates", "needs an N >= group_size");
  require(time_margin > 0, "time_margin", "must be > 0");
  require(exploration >= 0, "exploration", "must be >= 0");
  require(discount > 0 && discount <= 1, "discount", "must be in (0, 1]");
  require(timing_smoothing > 0 && timing_smoothing <= 1, "timing_smoothing", "must be in (0, 1]");
  require(!prior_seconds_per_sample_step || *prior_seconds_per_sample_step > 0,
          "prior_seconds_per_sample_step", "must be > 0");
}

BanditExplorationPolicy::BanditExplorationPolicy(BanditOptions options)
    : options_(std::move(options)),
      seconds_per_sample_step_(options_.prior_seconds_per_sample_step) {
  options_.validate();
  for (int n : options_.candidates) {
    if (n < options_.group_size) continue;
    for (int s : options_.steps) {
      const ExplorationDecision arm{n, s};
      if (std::find(arms_.begin(), arms_.end(), arm) == arms_.end()) arms_.push_back(arm);
    }
  }
  std::stable_sort(arms_.begin(), arms_.end(),
                   [](const auto& a, const auto& b) { return cost_of(a) < cost_of(b); });
  stats_.resize(arms_.size());
}

ExplorationDecision BanditExplorationPolicy::decide(const IterationContext& context) {
  BanditChoice choice;
  choice.iteration = context.iteration;
  choice.live_explorers = context.live_explorers;
  choice.seconds_per_sample_step = seconds_per_sample_step_;
  const auto training = context.training_time.value_or(context.time_budget);
  choice.budget_seconds = options_.time_margin * static_cast<double>(training.count()) / 1000.0;

  double total_pulls = 0;
  for (const Stats& s : stats_)
    total_pulls += s.pulls;
  const double scale = max_reward_ > 0 ? max_reward_ : 1.0;
  const bool known_capacity = context.live_explorers.has_value() && *context.live_explorers > 0;

  std::optional<std::size_t> best, untried, awaiting_untried;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::size_t a = 0; a < arms_.size(); ++a) {
    ArmReport r;
    r.arm = arms_[a];
    r.pulls = stats_[a].pulls;
    if (stats_[a].pulls > 0) r.mean = stats_[a].sum / stats_[a].pulls;
    if (seconds_per_sample_step_ && known_capacity) {
      r.predicted_seconds = static_cast<double>(context.prompts) * cost_of(arms_[a]) *
                            *seconds_per_sample_step_ /
                            static_cast<double>(*context.live_explorers);
      r.feasible = *r.predicted_seconds <= choice.budget_seconds;
    }
    if (r.feasible) {
      if (!r.mean) {
        // arms_ is cheapest first; an arm awaiting its first outcome counts as tried unless
        // every untried arm is awaiting.
        if (stats_[a].awaiting == 0 && !untried) untried = a;
        if (!awaiting_untried) awaiting_untried = a;
      } else {
        const double score =
            *r.mean / scale +
            options_.exploration * std::sqrt(2.0 * std::log(std::max(total_pulls, 1.0)) / r.pulls);
        r.score = score;
        if (score > best_score) {
          best_score = score;
          best = a;
        }
      }
    }
    choice.arms.push_back(r);
  }

  if (!context.live_explorers || *context.live_explorers <= 0) {
    choice.chosen = {0, 0};
    choice.reason = context.live_explorers ? "no live explorers" : "explorer count unknown";
  } else if (!seconds_per_sample_step_) {
    choice.chosen = arms_.front();
    choice.reason = "probe: no per-sample timing yet, cheapest arm";
  } else if (untried) {
    choice.chosen = arms_[*untried];
    choice.reason = "untried feasible arm";
  } else if (best) {
    choice.chosen = arms_[*best];
    choice.reason = "ucb";
  } else if (awaiting_untried) {
    choice.chosen = arms_[*awaiting_untried];
    choice.reason = "untried feasible arm (awaiting its first outcome)";
  } else {
    choice.chosen = {0, 0};
    choice.reason = "no arm feasible";
  }
  const ExplorationDecision chosen = choice.chosen;
  if (const auto it = std::find(arms_.begin(), arms_.end(), chosen); it != arms_.end()) {
    ++stats_[static_cast<std::size_t>(it - arms_.begin())].awaiting;
  }
  last_ = std::move(choice);
  return chosen;
}

void BanditExplorationPolicy::observe_reward(const ExplorationDecision& arm, double reward) {
  const auto it = std::find(arms_.begin(), arms_.end(), arm);
  if (it == arms_.end() || !std::isfinite(reward) || reward < 0) return;
  for (Stats& s : stats_) {
    s.pulls *= options_.discount;
    s.sum *= options_.discount;
  }
  Stats& s = stats_[static_cast<std::size_t>(it - arms_.begin())];
  if (s.awaiting > 0) --s.awaiting;
  s.pulls += 1;
  s.sum += reward;
  max_reward_ = std::max(max_reward_, reward);
}

void BanditExplorationPolicy::observe_timing(double seconds_per_sample_step) {
  if (!std::isfinite(seconds_per_sample_step) || seconds_per_sample_step <= 0) return;
  if (!seconds_per_sample_step_ || !measured_) {
    seconds_per_sample_step_ = seconds_per_sample_step;  // the first measurement replaces a prior
    measured_ = true;
    return;
  }
  const double w = options_.timing_smoothing;
  *seconds_per_sample_step_ = (1 - w) * *seconds_per_sample_step_ + w * seconds_per_sample_step;
}

void BanditExplorationPolicy::observe(const IterationOutcome& outcome) {
  if (outcome.seconds_per_sample_step) observe_timing(*outcome.seconds_per_sample_step);
  if (outcome.group_variance && outcome.decision.candidates > 0) {
    observe_reward(outcome.decision, *outcome.group_variance);
  }
}

}  // namespace spotlight::exploration
