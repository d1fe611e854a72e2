#pragma once
// The trainer's Prometheus metrics (docs/operations.md), all named spotlight_trainer_*. The step
// time split uses one label, phase = rollout | reward | train | wait_for_seeds | audit, where
// wait_for_seeds is the time exploration held the trainer up (sync: exploring on the trainer;
// async: waiting for the explorers' results).
//
// Contract: observe() is called once per report, in iteration order, from one thread; the
// handles are thread-safe and stay valid while the registry lives.

#include <array>
#include <cstdint>

#include "common/metrics/metrics.hpp"
#include "services/trainer/grpo_trainer.hpp"

namespace spotlight::trainer {

class TrainerMetrics {
 public:
  // Registers every metric in `registry` (service "trainer"). `iterations` is the run's target
  // iteration count (exported so dashboards can estimate the time to it); `samples_per_iteration`
  // is prompts x group size (rollout throughput).
  TrainerMetrics(metrics::Registry& registry, int iterations, int samples_per_iteration);

  // The starting weights are version `version` (0 fresh, >0 resumed).
  void started(std::int64_t version);
  // One report of GrpoTrainer::run: the base validation (iteration < 0) or a trained iteration.
  void observe(const IterationReport& report);

  static constexpr std::array<const char*, 5> kPhases = {"rollout", "reward", "train",
                                                         "wait_for_seeds", "audit"};

 private:
  int samples_per_iteration_;
  metrics::Gauge iteration_;          // iterations completed (= weights version trained)
  metrics::Gauge iterations_target_;  // trainer.iterations
  metrics::Gauge weights_version_;
  metrics::Counter iterations_total_;
  metrics::Counter samples_total_;
  metrics::Counter fallback_prompts_total_;
  metrics::Counter dead_lettered_tasks_total_;
  metrics::Histogram iteration_seconds_;
  std::array<metrics::Counter, kPhases.size()> phase_seconds_total_;
  std::array<metrics::Gauge, kPhases.size()> phase_last_seconds_;
  metrics::Gauge reward_mean_;
  metrics::Gauge reward_std_;
  metrics::Gauge selected_variance_;
  metrics::Gauge zero_std_ratio_;
  metrics::Gauge kendall_tau_;
  metrics::Gauge validation_score_;
  metrics::Gauge validation_reward_;
  metrics::Gauge clip_fraction_;
  metrics::Gauge kl_;
  // Rollouts by source (reused from exploration or sampled by the trainer), kept trajectories
  // not trained on by reason, and the last iteration's importance ratios.
  metrics::Counter rollouts_reused_total_;
  metrics::Counter rollouts_sampled_total_;
  metrics::Registry& registry_;
  metrics::Gauge ratio_mean_;
  metrics::Gauge ratio_max_abs_log_;
};

// One rank's share of data-parallel training (trainer.ranks), labelled rank="r": every rank
// serves its own, rank 0 next to the group's metrics above. Same contract as TrainerMetrics.
class RankMetrics {
 public:
  RankMetrics(metrics::Registry& registry, int rank, int ranks);
  void observe(const IterationReport& report);  // a trained iteration of this rank

  static constexpr std::array<const char*, 3> kPhases = {"rollout", "train", "allreduce"};

 private:
  metrics::Gauge ranks_;
  metrics::Counter iterations_total_;
  metrics::Gauge iteration_seconds_;
  std::array<metrics::Counter, kPhases.size()> phase_seconds_total_;
  metrics::Counter allreduce_bytes_total_;
};

}  // namespace spotlight::trainer
