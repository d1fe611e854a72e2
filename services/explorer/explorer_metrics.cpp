#include "services/explorer/explorer_metrics.hpp"

namespace spotlight::explorer {

ExplorerMetrics::ExplorerMetrics(metrics::Registry& r)
    : tasks_leased(
          r.counter("spotlight_explorer_tasks_leased_total", "Seed task leases received.")),
      tasks_completed(r.counter("spotlight_explorer_tasks_completed_total",
                                "Seed task results recorded by this explorer.")),
      duplicate_results(r.counter("spotlight_explorer_duplicate_results_total",
                                  "Completions that found a result already recorded.")),
      malformed_tasks(r.counter("spotlight_explorer_malformed_tasks_total",
                                "Seed task payloads rejected as malformed.")),
      tasks_failed(r.counter("spotlight_explorer_tasks_failed_total",
                             "Seed tasks failed back to the queue with an error.")),
      tasks_released(r.counter("spotlight_explorer_tasks_released_total",
                               "Seed task leases released unfinished.")),
      weights_loaded(
          r.counter("spotlight_explorer_weights_loaded_total", "Weights versions loaded.")),
      weights_corrupt(r.counter("spotlight_explorer_weights_corrupt_total",
                                "Fetched weights versions rejected as corrupt.")),
      weights_untrusted(
          r.counter("spotlight_explorer_weights_untrusted_total",
                    "Fetched weights versions refused because their manifest is unsigned or not "
                    "signed with the run's key (also counted as corrupt).")),
      weights_prefetched(r.counter("spotlight_explorer_weights_prefetched_total",
                                   "Weights versions loaded on a notice of the trainer's bus (or "
                                   "its Redis resync) before a task asked for them.")),
      redis_errors(r.counter("spotlight_explorer_redis_errors_total",
                             "Operations that failed because Redis was unavailable.")),
      reward_errors(
          r.counter("spotlight_explorer_reward_errors_total", "Reward calls that failed.")),
      invalid_results(
          r.counter("spotlight_explorer_invalid_results_total",
                    "Results not recorded: they did not check out against their task.")),
      non_finite_samples(
          r.counter("spotlight_explorer_non_finite_samples_total",
                    "Samples whose pixels were not all finite (failed, not scored).")),
      preemption_notices(r.counter("spotlight_explorer_preemption_notices_total",
                                   "Preemption notices received (signal, file or URL).")),
      inflight_commits(r.counter("spotlight_explorer_inflight_commits_total",
                                 "In-flight samples committed on a preemption notice.")),
      resumes(r.counter("spotlight_explorer_resumes_total",
                        "Committed samples resumed from their committed step.")),
      discarded_commits(r.counter("spotlight_explorer_discarded_commits_total",
                                  "Committed samples restarted from step 0 (unusable commit).")),
      sample_steps(r.counter("spotlight_explorer_sample_steps_total",
                             "Sampler steps computed (one per sample and step).")),
      trajectories_kept(r.counter("spotlight_explorer_trajectories_kept_total",
                                  "Trajectories of sampled seeds written for the trainer.")),
      trajectory_bytes(r.counter("spotlight_explorer_trajectory_bytes_total",
                                 "Bytes of the trajectories written for the trainer.")),
      trajectories_unavailable(
          r.counter("spotlight_explorer_trajectories_unavailable_total",
                    "Tasks that asked for a trajectory this explorer could not keep.")),
      samples_per_second(r.gauge("spotlight_explorer_samples_per_second",
                                 "Samples per second of the last chunk (sampling and scoring).")),
      weights_version(
          r.gauge("spotlight_explorer_weights_version", "Loaded weights version (-1: none).")),
      weights_fetch_seconds(r.histogram("spotlight_explorer_weights_fetch_seconds",
                                        "Fetch, verification and load of one weights version.",
                                        metrics::exponential_buckets(0.001, 4, 10))),
      sample_seconds(r.histogram("spotlight_explorer_sample_seconds",
                                 "Sampling and scoring time per sample.",
                                 metrics::exponential_buckets(0.0005, 4, 10))),
      chunk_sample_seconds(r.counter("spotlight_explorer_chunk_seconds_total",
                                     "Time spent on chunks of tasks, by phase (sample, score, "
                                     "record: results and trajectories written).",
                                     {{"phase", "sample"}})),
      chunk_score_seconds(r.counter("spotlight_explorer_chunk_seconds_total",
                                    "Time spent on chunks of tasks, by phase (sample, score, "
                                    "record: results and trajectories written).",
                                    {{"phase", "score"}})),
      chunk_record_seconds(r.counter("spotlight_explorer_chunk_seconds_total",
                                     "Time spent on chunks of tasks, by phase (sample, score, "
                                     "record: results and trajectories written).",
                                     {{"phase", "record"}})),
      explored_images(r.counter("spotlight_explorer_explored_images_total",
                                "Candidate images kept for the trainer's exploration samples.")),
      explored_image_errors(r.counter("spotlight_explorer_explored_image_errors_total",
                                      "Candidate images not kept for an exploration sample "
                                      "because of a failure (logged).")),
      staleness_versions(
          r.histogram("spotlight_explorer_staleness_versions",
                      "Iteration explored for minus the weights version used, per result.",
                      metrics::linear_buckets(0, 1, 6))) {
  weights_version.set(-1);
  for (const char* reason :
       {"malformed", "unsigned", "other_key", "bad_signature", "out_of_limits"}) {
    refused_.emplace(
        reason, r.counter("spotlight_explorer_tasks_refused_total",
                          "Seed tasks refused before running, by reason.", {{"reason", reason}}));
  }
  for (const char* reason : {"non_finite", "out_of_range"}) {
    reward_faults_.emplace(
        reason, r.counter("spotlight_explorer_reward_faults_total",
                          "Rewards refused (not finite, or outside the reward function's declared "
                          "range); each one's task is dead-lettered.",
                          {{"reason", reason}}));
  }
}

metrics::Counter ExplorerMetrics::reward_faults(std::string_view reason) const {
  const auto it = reward_faults_.find(reason);
  return it == reward_faults_.end() ? metrics::Counter() : it->second;
}

metrics::Counter ExplorerMetrics::refused(std::string_view reason) const {
  const auto it = refused_.find(reason);
  return it == refused_.end() ? metrics::Counter() : it->second;
}

}  // namespace spotlight::explorer
