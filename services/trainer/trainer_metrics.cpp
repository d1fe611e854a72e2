#include "services/trainer/trainer_metrics.hpp"

#include <algorithm>
#include <string>

namespace spotlight::trainer {

TrainerMetrics::TrainerMetrics(metrics::Registry& r, int iterations, int samples_per_iteration)
    : samples_per_iteration_(samples_per_iteration),
      iteration_(r.gauge("spotlight_trainer_iterations_completed",
                         "Iterations completed (the weights version being trained).")),
      iterations_target_(r.gauge("spotlight_trainer_iterations_target",
                                 "Iterations the run trains in all (trainer.iterations).")),
      weights_version_(
          r.gauge("spotlight_trainer_weights_version", "Newest weights version published.")),
      iterations_total_(
          r.counter("spotlight_trainer_iterations_total", "Iterations trained by this process.")),
      samples_total_(
          r.counter("spotlight_trainer_samples_total", "On-policy rollout samples trained on.")),
      fallback_prompts_total_(r.counter("spotlight_trainer_fallback_prompts_total",
                                        "Prompts that fell back to random seeds.")),
      dead_lettered_tasks_total_(
          r.counter("spotlight_trainer_dead_lettered_tasks_total",
                    "Explored candidates lost because the queue dead-lettered their tasks.")),
      iteration_seconds_(r.histogram("spotlight_trainer_iteration_seconds",
                                     "Wall time of one iteration (audit excluded).",
                                     metrics::exponential_buckets(0.25, 2, 14))),
      reward_mean_(r.gauge("spotlight_trainer_reward_mean", "Mean rollout reward.")),
      reward_std_(r.gauge("spotlight_trainer_reward_std", "Std of the rollout rewards.")),
      selected_variance_(r.gauge("spotlight_trainer_selected_group_variance",
                                 "Mean within-group reward variance of the selected seeds.")),
      zero_std_ratio_(r.gauge("spotlight_trainer_zero_std_group_ratio",
                              "Fraction of groups whose rewards are all alike.")),
      kendall_tau_(r.gauge("spotlight_trainer_kendall_tau",
                           "Staleness audit: Kendall tau between stale and fresh rewards.")),
      validation_score_(r.gauge("spotlight_trainer_validation_score",
                                "GenEval-like validation score of the newest validation.")),
      validation_reward_(
          r.gauge("spotlight_trainer_validation_reward", "Mean reward of the newest validation.")),
      clip_fraction_(r.gauge("spotlight_trainer_clip_fraction",
                             "Fraction of clipped PPO ratios in the last iteration.")),
      kl_(r.gauge("spotlight_trainer_kl_divergence", "KL to the reference in the last iteration.")),
      rollouts_reused_total_(r.counter("spotlight_trainer_rollouts_total",
                                       "Rollouts trained on, by source: reused from exploration "
                                       "or sampled by the trainer.",
                                       {{"source", "reused"}})),
      rollouts_sampled_total_(r.counter("spotlight_trainer_rollouts_total",
                                        "Rollouts trained on, by source: reused from exploration "
                                        "or sampled by the trainer.",
                                        {{"source", "sampled"}})),
      registry_(r),
      ratio_mean_(r.gauge("spotlight_trainer_importance_ratio_mean",
                          "Mean ratio pi/pi_old over the trained sample-steps, last iteration.")),
      ratio_max_abs_log_(
          r.gauge("spotlight_trainer_importance_log_ratio_max_abs",
                  "Largest |log(pi/pi_old)| over the trained sample-steps, last iteration.")) {
  for (std::size_t i = 0; i < kPhases.size(); ++i) {
    phase_seconds_total_[i] =
        r.counter("spotlight_trainer_step_seconds_total", "Iteration time by phase, summed.",
                  {{"phase", kPhases[i]}});
    phase_last_seconds_[i] =
        r.gauge("spotlight_trainer_step_seconds", "Iteration time by phase, last iteration.",
                {{"phase", kPhases[i]}});
  }
  iterations_target_.set(iterations);
}

void TrainerMetrics::started(std::int64_t version) {
  iteration_.set(static_cast<double>(version));
  weights_version_.set(static_cast<double>(version));
}

void TrainerMetrics::observe(const IterationReport& r) {
  if (r.validation) {
    validation_score_.set(r.validation->geneval_score);
    validation_reward_.set(r.validation->mean_reward);
  }
  if (r.iteration < 0) return;  // the base model's validation only
  iteration_.set(static_cast<double>(r.iteration + 1));
  weights_version_.set(static_cast<double>(r.iteration + 1));
  iterations_total_.inc();
  samples_total_.inc(samples_per_iteration_);
  fallback_prompts_total_.inc(r.fallback_prompts);
  dead_lettered_tasks_total_.inc(r.dead_lettered_tasks);
  iteration_seconds_.observe(r.iteration_seconds);
  const std::array<double, kPhases.size()> phases = {
      r.rollout_seconds, r.reward_seconds, r.train_seconds, r.explore_seconds, r.audit_seconds};
  for (std::size_t i = 0; i < phases.size(); ++i) {
    phase_seconds_total_[i].inc(phases[i]);
    phase_last_seconds_[i].set(phases[i]);
  }
  reward_mean_.set(r.reward_mean);
  reward_std_.set(r.reward_std);
  selected_variance_.set(r.selected_variance);
  zero_std_ratio_.set(r.zero_std_ratio);
  if (r.kendall_tau) kendall_tau_.set(*r.kendall_tau);
  clip_fraction_.set(r.clip_fraction);
  kl_.set(r.kl);
  rollouts_reused_total_.inc(r.rollouts_reused);
  rollouts_sampled_total_.inc(r.rollouts_sampled);
  ratio_mean_.set(r.ratio_mean);
  ratio_max_abs_log_.set(r.ratio_max_abs_log);
  for (const auto& [reason, n] : r.trajectories_rejected) {
    registry_
        .counter("spotlight_trainer_rejected_trajectories_total",
                 "Kept trajectories of chosen seeds not trained on, by reason (missing, "
                 "undecodable, mismatch, weights_version, weights_checksum, checksum).",
                 {{"reason", reason}})
        .inc(n);
  }
}

namespace {
std::array<metrics::Counter, RankMetrics::kPhases.size()> rank_phase_counters(
    metrics::Registry& r, const std::string& rank) {
  auto counter = [&](const char* phase) {
    return r.counter("spotlight_trainer_rank_phase_seconds_total",
                     "Seconds this rank spent per phase: rollout (its samples, sampled and "
                     "scored), train (its micro-batches), allreduce (gradients).",
                     {{"rank", rank}, {"phase", phase}});
  };
  return {counter(RankMetrics::kPhases[0]), counter(RankMetrics::kPhases[1]),
          counter(RankMetrics::kPhases[2])};
}
}  // namespace

RankMetrics::RankMetrics(metrics::Registry& r, int rank, int ranks)
    : ranks_(r.gauge("spotlight_trainer_group_ranks",
                     "Data-parallel trainer ranks (trainer.ranks).",
                     {{"rank", std::to_string(rank)}})),
      iterations_total_(r.counter("spotlight_trainer_rank_iterations_total",
                                  "Iterations this rank trained.",
                                  {{"rank", std::to_string(rank)}})),
      iteration_seconds_(r.gauge("spotlight_trainer_rank_iteration_seconds",
                                 "Wall time of this rank's last iteration.",
                                 {{"rank", std::to_string(rank)}})),
      phase_seconds_total_(rank_phase_counters(r, std::to_string(rank))),
      allreduce_bytes_total_(r.counter("spotlight_trainer_rank_allreduce_bytes_total",
                                       "Gradient bytes this rank all-reduced.",
                                       {{"rank", std::to_string(rank)}})) {
  ranks_.set(ranks);
}

void RankMetrics::observe(const IterationReport& r) {
  if (r.iteration < 0) return;
  iterations_total_.inc();
  iteration_seconds_.set(r.iteration_seconds);
  phase_seconds_total_[0].inc(r.rollout_seconds + r.reward_seconds);
  phase_seconds_total_[1].inc(std::max(0.0, r.train_seconds - r.allreduce_seconds));
  phase_seconds_total_[2].inc(r.allreduce_seconds);
  allreduce_bytes_total_.inc(static_cast<double>(r.allreduce_bytes));
}

}  // namespace spotlight::trainer
