#pragma once
// The explorer's Prometheus metrics (docs/operations.md), all named spotlight_explorer_*.
// Handles are thread-safe to update and stay valid while the registry lives.

#include <map>
#include <string>
#include <string_view>

#include "common/metrics/metrics.hpp"

namespace spotlight::explorer {

struct ExplorerMetrics {
  // Registers (or finds) every metric in `registry`, whose service must be "explorer".
  explicit ExplorerMetrics(metrics::Registry& registry);

  metrics::Counter tasks_leased;       // leases received (first deliveries and reclaims)
  metrics::Counter tasks_completed;    // results this explorer recorded first
  metrics::Counter duplicate_results;  // complete() found a result already (task ran twice)
  metrics::Counter malformed_tasks;    // payloads refused (any reason of tasks_refused)
  metrics::Counter tasks_failed;       // fail() calls (malformed or sampling/scoring errors)
  metrics::Counter tasks_released;     // leases given back (weights missing, stop, reward down)
  metrics::Counter weights_loaded;     // weights versions loaded into the policy
  metrics::Counter weights_corrupt;    // fetched versions rejected (checksum, undecodable)
  // ... of which their manifest was unsigned or mis-signed (store::UntrustedWeights)
  metrics::Counter weights_untrusted;
  // Versions loaded by the prefetcher (a weights notice or its Redis resync) before a task asked.
  metrics::Counter weights_prefetched;
  metrics::Counter redis_errors;   // operations that failed because Redis was unavailable
  metrics::Counter reward_errors;  // scoring calls that threw
  // Issue #13.5: tasks refused before running, by reason ("malformed", "unsigned", "other_key",
  // "bad_signature", "out_of_limits"); results not recorded because they did not check out
  // against their task (e.g. a reward that is not finite); samples whose pixels were not finite.
  metrics::Counter refused(std::string_view reason) const;
  // Rewards refused as faults of the reward function, by reason ("non_finite", "out_of_range":
  // outside the range the function declares); each one's task is dead-lettered.
  metrics::Counter reward_faults(std::string_view reason) const;
  metrics::Counter invalid_results;
  metrics::Counter non_finite_samples;
  // Preemption (issue #4): notices received, in-flight samples committed on a notice, committed
  // samples resumed from their step, commits found but not usable (other weights version, bad
  // shape or step: the task restarts from step 0), sampler steps computed.
  metrics::Counter preemption_notices;
  metrics::Counter inflight_commits;
  metrics::Counter resumes;
  metrics::Counter discarded_commits;
  metrics::Counter sample_steps;
  // Kept trajectories (exploration.reuse=off_policy, offload): written, their bytes, and tasks
  // that asked for one this explorer could not keep (no trajectory store, SP sampling).
  metrics::Counter trajectories_kept;
  metrics::Counter trajectory_bytes;
  metrics::Counter trajectories_unavailable;
  metrics::Gauge samples_per_second;         // of the last chunk (sampling + scoring)
  metrics::Gauge weights_version;            // loaded version; -1 before the first load
  metrics::Histogram weights_fetch_seconds;  // fetch + verify + load of one version
  metrics::Histogram sample_seconds;         // per sample, sampling + scoring
  // spotlight_explorer_chunk_seconds_total{phase="sample" | "score" | "record"}
  metrics::Counter chunk_sample_seconds;
  metrics::Counter chunk_score_seconds;
  metrics::Counter chunk_record_seconds;
  // Images kept for the trainer's exploration samples, and ones lost to a failure.
  metrics::Counter explored_images;
  metrics::Counter explored_image_errors;
  // Per result: the iteration the seed is explored for minus the weights version used (the
  // trainer trains iteration t with version t, so 1 is the designed one-version staleness).
  metrics::Histogram staleness_versions;

 private:
  std::map<std::string, metrics::Counter, std::less<>> refused_;
  std::map<std::string, metrics::Counter, std::less<>> reward_faults_;
};

}  // namespace spotlight::explorer
