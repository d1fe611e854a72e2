#pragma once
// The bandit that decides how much to explore (docs/algorithm.md): each iteration it picks an
// arm (candidates per prompt N, exploration sampler steps S) from a configured grid to maximise
// the reward variance of the groups the trainer then trains on, subject to the exploration
// finishing inside the trainer's predicted training time given the live explorer capacity.
//
//   predicted_seconds(N, S) = P * N * S * seconds_per_sample_step / live_explorers
//   feasible(N, S)         <=> N >= G and predicted_seconds <= time_margin * training_time
//   decide():
//     no explorers alive                      -> {0, 0}: explore nothing (trainer: random seeds)
//     no timing yet (no measurement, no prior) -> the cheapest arm (N*S least): a probe
//     no arm feasible                         -> {0, 0}
//     otherwise among the feasible arms: an arm never observed nor awaiting its first outcome
//       (cheapest first; with lookahead a decision comes before the previous one's outcome), else
//       the arm of
//       highest discounted-UCB score  mean_a + c * sqrt(2 ln n / n_a)  (rewards scaled into
//       [0, 1] by the largest reward seen; n_a, n and the sums decay by `discount` per update)
//
// So the policy never schedules an arm it predicts cannot finish in time, and it adapts when
// explorers leave or join (the prediction divides by the live count at every decision) or when
// the measured per-sample time changes (an exponential moving average of observations).
//
// Deterministic given its options, the observations and the context (ExplorationPolicy's
// contract). Not thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/exploration/exploration_policy.hpp"

namespace spotlight::exploration {

struct BanditOptions {
  std::vector<int> candidates{8, 16, 24, 32};  // N grid; arms with N < group_size are left out
  std::vector<int> steps{4, 6, 10};            // S grid, each >= 2
  int group_size = 8;                          // G
  double time_margin = 0.9;                    // share of the training time exploration may use
  double exploration = 0.5;                    // UCB width c
  double discount = 0.95;                      // per-update decay of the arm statistics, (0, 1]
  double timing_smoothing = 0.3;               // weight of a new per-sample-step time, (0, 1]
  // Seconds per sample per sampler step before any measurement; nullopt: probe the cheapest arm.
  std::optional<double> prior_seconds_per_sample_step;

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

// One arm's standing at a decision (the "why" of the choice).
struct ArmReport {
  ExplorationDecision arm;
  std::optional<double> predicted_seconds;  // nullopt: no timing known
  bool feasible = false;
  double pulls = 0;             // discounted count
  std::optional<double> mean;   // discounted mean of the raw rewards; nullopt: never observed
  std::optional<double> score;  // UCB score (feasible arms only; +inf shown as nullopt)
};

struct BanditChoice {
  std::int64_t iteration = 0;
  ExplorationDecision chosen;  // candidates 0: nothing explored
  std::string reason;          // "ucb", "untried", "probe: no timing yet", "no explorers", ...
  double budget_seconds = 0;   // time_margin * training time
  std::optional<int> live_explorers;
  std::optional<double> seconds_per_sample_step;
  std::vector<ArmReport> arms;
};

class BanditExplorationPolicy final : public ExplorationPolicy {
 public:
  // Throws std::invalid_argument for bad options (or a grid with no arm of N >= G).
  explicit BanditExplorationPolicy(BanditOptions options);

  // May return {0, 0}: explore nothing this iteration (see above).
  ExplorationDecision decide(const IterationContext& context) override;

  // The reward an arm earned: the mean within-group variance of the rewards the trainer trained
  // on (>= 0; larger is better). Unknown arms are ignored.
  void observe_reward(const ExplorationDecision& arm, double reward);
  // A measured time of one sample at one sampler step on one explorer (> 0; others ignored).
  void observe_timing(double seconds_per_sample_step);
  // Both of the above from an outcome (group_variance as the reward).
  void observe(const IterationOutcome& outcome) override;
  // The arm of most work (N * S).
  std::optional<ExplorationDecision> widest() const override { return arms_.back(); }

  std::optional<double> seconds_per_sample_step() const { return seconds_per_sample_step_; }
  const std::optional<BanditChoice>& last_choice() const { return last_; }
  const std::vector<ExplorationDecision>& arms() const { return arms_; }

 private:
  struct Stats {
    double pulls = 0;
    double sum = 0;
    int awaiting = 0;  // decided, outcome not observed yet
  };
  BanditOptions options_;
  std::vector<ExplorationDecision> arms_;  // cheapest (N * S) first
  std::vector<Stats> stats_;
  double max_reward_ = 0;
  std::optional<double> seconds_per_sample_step_;
  bool measured_ = false;  // seconds_per_sample_step_ holds a measurement, not the prior
  std::optional<BanditChoice> last_;
};

}  // namespace spotlight::exploration
