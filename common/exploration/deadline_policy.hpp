#pragma once
// The deadline policy (planner.policy=deadline, the default of exploration.mode=async): explore as
// much as will be done before the trainer needs it, with a stated probability.
//
//   budget = the trainer's measured training time (context.training_time), else time_budget
//   work(N, S) = {P * N samples of S steps, behind the queue's backlog}
//   p(N, S)   = context.finish_model->predict(work, live explorers, budget).probability
//   decide():
//     no explorers alive                        -> {0, 0}: explore nothing (trainer: random seeds)
//     no timing yet (no model or no measurement) -> the cheapest arm (N * S least): a probe
//     otherwise: the arm of most work (N * S, then N) with p >= probability; none -> {0, 0}
//
// Arms: candidates x steps, N >= group_size (fewer leaves nothing to select). Unlike the bandit
// it learns nothing from the group variance: more candidates never lower the best G-of-N
// variance, so the widest exploration that finishes in time is the one to take, and the only
// uncertainty worth modelling is time (finish_time.hpp: the per-sample-step time distribution and
// the preemption rate). Deterministic given the context (ExplorationPolicy's contract).
// Not thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/exploration/exploration_policy.hpp"

namespace spotlight::exploration {

struct DeadlineOptions {
  std::vector<int> candidates{8, 16, 24, 32};  // N grid; arms with N < group_size are left out
  std::vector<int> steps{4, 6, 10};            // S grid, each >= 2
  int group_size = 8;                          // G
  double probability = 0.9;                    // of finishing within the budget, (0, 1)

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

// One decision and its reason (for the plan record and the decisions file).
struct DeadlineChoice {
  std::int64_t iteration = 0;
  ExplorationDecision chosen;  // candidates 0: nothing explored
  std::string reason;          // "largest in time", "probe: no timing yet", "no explorers", ...
  double budget_seconds = 0;
  std::optional<int> live_explorers;
  std::optional<double> predicted_seconds;  // mean finish of the chosen arm
  std::optional<double> probability;        // of the chosen arm
};

class DeadlineExplorationPolicy final : public ExplorationPolicy {
 public:
  // Throws std::invalid_argument for bad options (or a grid with no arm of N >= G).
  explicit DeadlineExplorationPolicy(DeadlineOptions options);

  ExplorationDecision decide(const IterationContext& context) override;
  std::optional<ExplorationDecision> widest() const override { return arms_.front(); }

  const std::optional<DeadlineChoice>& last_choice() const { return last_; }
  // Most work first.
  const std::vector<ExplorationDecision>& arms() const { return arms_; }

 private:
  DeadlineOptions options_;
  std::vector<ExplorationDecision> arms_;
  std::optional<DeadlineChoice> last_;
};

}  // namespace spotlight::exploration
