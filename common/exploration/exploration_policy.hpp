#pragma once
// How much to explore for one iteration: the planner's one decision that a bandit will make later
// (docs/algorithm.md: arms such as candidates-per-prompt and exploration step count). The
// planner asks once per target iteration, just before enqueueing it, and enqueues
// prompts x decision.candidates seed tasks sampled with decision.steps steps. A decision of
// candidates 0 means "explore nothing for this iteration": the planner enqueues no task and the
// plan record tells the trainer to use random seeds at once.
//
// Contract for implementations: decide() must be deterministic given the context and the
// policy's own state, because a restarted planner may ask again for an iteration that was already
// (partly) enqueued; enqueueing is idempotent by task id, so a different answer only adds tasks
// (a larger N) or leaves some unused (a smaller N). Not thread-safe: the planner calls it from
// its one loop thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace spotlight::exploration {

class FinishTimeModel;  // finish_time.hpp

// What the planner knows when it plans one iteration.
struct IterationContext {
  std::int64_t iteration = 0;          // the iteration to explore
  std::int64_t trainer_iteration = 0;  // the iteration the trainer works on now (<= iteration)
  int prompts = 0;                     // P: prompts of the iteration
  // How long exploration may take: the trainer's last iteration time, else the trainer's wait cap.
  std::chrono::milliseconds time_budget{0};
  std::optional<int>
      live_explorers;            // heartbeats fresher than the dead threshold; nullopt: unknown
  std::int64_t queue_depth = 0;  // tasks enqueued and not yet acknowledged
  // The trainer's predicted compute time of one iteration (its last rollout + reward + train
  // time, without waiting for seeds): what exploration of the next iteration runs beside.
  // nullopt: not measured yet (use time_budget).
  std::optional<std::chrono::milliseconds> training_time;
  // The planner's model of the explorer pool (measured per-sample-step times, preemption rate);
  // null: none. Valid during decide() only.
  const FinishTimeModel* finish_model = nullptr;
};

struct ExplorationDecision {
  int candidates = 1;  // N: seed tasks per prompt, >= 1 (0: explore nothing)
  int steps = 2;       // sampler steps of each seed task, >= 2 (unused when candidates is 0)
  bool operator==(const ExplorationDecision&) const = default;
};

// What an explored iteration turned out to be, fed back once the trainer has trained on it.
struct IterationOutcome {
  std::int64_t iteration = 0;
  ExplorationDecision decision;  // what was planned for it (its plan record)
  // Mean within-group variance of the rewards the trainer trained on; nullopt: not reported.
  std::optional<double> group_variance;
  // Mean measured seconds of one sample at one sampler step on one explorer; nullopt: no result.
  std::optional<double> seconds_per_sample_step;
  // Each result's measured seconds per sampler step (the distribution behind the mean above).
  std::vector<double> sample_step_seconds;
};

class ExplorationPolicy {
 public:
  virtual ~ExplorationPolicy() = default;
  virtual ExplorationDecision decide(const IterationContext& context) = 0;
  // Learns from an outcome (default: nothing to learn). Called at most once per iteration by one
  // planner; a restarted planner starts without the earlier outcomes.
  virtual void observe(const IterationOutcome& outcome) {}
  // The widest exploration this policy may ever decide (what an autoscaler should size the pool
  // for); nullopt: unknown.
  virtual std::optional<ExplorationDecision> widest() const { return std::nullopt; }
};

// The same N and steps for every iteration (exploration.candidates, exploration.steps).
class FixedExplorationPolicy final : public ExplorationPolicy {
 public:
  // Throws std::invalid_argument when decision.candidates < 1 or decision.steps < 2.
  explicit FixedExplorationPolicy(ExplorationDecision decision);
  ExplorationDecision decide(const IterationContext& context) override;
  std::optional<ExplorationDecision> widest() const override { return decision_; }

 private:
  ExplorationDecision decision_;
};

}  // namespace spotlight::exploration
