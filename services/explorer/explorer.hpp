#pragma once
// Explorer: the spot worker of exploration.mode=async (docs/iteration.md,
// docs/contracts.md). It pulls seed tasks under leases, samples them with weights at most
// max_staleness versions older than each task asks for, scores them and records one result per
// task before acknowledging it.
//
// run(stop) is equivalent to:
//
//   until stop is requested:
//     every heartbeat_interval:    heartbeat = wire::Heartbeat{id, unix ms, leases held,
//                                                          samples/s of the last chunk}
//     every finish_poll_interval:  if the trainer's progress is finished or its iteration >=
//                                  iterations: return kRunFinished
//     until the run's task key is known: key = parts.task_key() (none yet: wait, lease nothing)
//     leases  = reclaim(id, lease_timeout, batch)          every reclaim_interval
//     leases += lease(id, batch - |leases|, block_timeout)  (no wait if reclaim returned some)
//     for each lease (issue #13.5; refusals are counted by reason):
//       decode wire::SeedTask                     malformed -> fail(lease)   (retried)
//       run::verify(task, key)          unsigned / bad_signature -> reject(lease): dead-lettered
//                                                                  now, never run
//                                       other_key -> fail(lease) (another explorer may hold it)
//       run::task_problem(task, options.limits)   out_of_limits -> fail(lease)
//     (a failed lease is dead-lettered after max_deliveries)
//     (the batch pins the loaded weights: a version the prefetcher offers meanwhile is loaded
//      after the batch, weights_prefetch.hpp)
//     weights.ensure(max over tasks of weights_version - bound)   (PolicyWeights; bound: the
//         task's max_staleness when set and tighter, else max_staleness)
//     tasks the loaded version cannot serve -> release(lease); wait weights_retry_interval
//     per task: commit = inflight.get(task id)    (InflightStore; see inflight_store.hpp)
//     v = the weights version most commits of the batch were made with, among those >= the
//         batch's need; if any: weights.load_exact(v) (resuming saves the committed steps)
//     weights.ensure(need) as above, then per commit: usable if its weights version == the
//         loaded one, seed and shape match and 1 <= step < steps (and step <= trajectory_begin
//         for a task that keeps its trajectory); else counted as discarded (starts at step 0)
//     the rest, grouped by (sampler_steps, resume step) (lease order within a group), chunk by
//     chunk:
//       stop requested  -> release the leases not sampled yet, return kStopped
//       heartbeat / extend the held leases when due (a lost lease is dropped, not sampled)
//       sample (SDE, the task's steps and seeds) step by step from the resume step; before each
//         step, if stop requested: commit_inflight ? inflight.put(commit) per task : nothing;
//         then release the chunk's leases and return kStopped
//       a sample whose pixels are not all finite -> fail(lease), not scored
//       score, then per task
//       reward not finite or outside parts.reward.range() -> reject(lease): dead-lettered now as
//                                      a reward fault, counted by reason, logged (throttled)
//       run::result_problem(result, task) -> fail(lease), not recorded
//       if the task asks for its trajectory (trajectory_end > 0):
//         trajectories.put(task id, SeedTrajectory)   (latents of the asked steps, log-probs,
//                                       weights version + checksum; before the result, so a
//                                       result whose trajectory was kept finds it)
//       complete(lease, SeedResult)    (both retried while Redis is unavailable; a duplicate is
//                                       counted, never an error); inflight.erase(task id)
//     after every step: heartbeat / extend the chunk's leases when due (a long chunk must not
//     look dead to the planner's reaper nor let its leases expire);
//     every step adds the chunk's size to the run counter of sample steps (RunState), and a
//     resume adds the steps it skipped to that of resumed steps: work done and work saved across
//     all explorers, killed ones included
//   return kStopped
//
// Failures never end the loop, except refused credentials (QueueAccessDenied / StoreAccessDenied
// propagate): Redis unavailable -> count, back off (doubling from min_backoff to max_backoff),
// retry, logging one line per change of state (outage::OutageTracker); a result is "done" only
// after complete() returned, and leases that cannot be completed or released are left to expire
// (re-delivered to another explorer). Tasks failed after sampling with a weights version (a
// sampling error, pixels not finite, an invalid input to the reward, a result that does not check
// out) are counted per version: the 3rd failure on one version is logged as an error naming the
// version, then every doubling (6, 12, 24, ...). A sampling error fails the chunk's leases; a
// reward error releases them (the reward service may be down) unless the input was invalid (fail).
// After a stop request the chunk being sampled stops at its next step boundary (committed, then
// released; a chunk already past its last step is scored and completed), the rest is released, and
// run() returns within grace_period of the request plus one sampler step (plus one scoring call).
//
// Thread-compatible: run() uses its collaborators from the calling thread only; give every
// explorer thread its own queue, stores, reward and policy.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "common/log/throttle.hpp"
#include "common/metrics/metrics.hpp"
#include "common/outage/outage_tracker.hpp"
#include "common/queue/lease_queue.hpp"
#include "common/reward/reward_function.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_state.hpp"
#include "common/run/task_signature.hpp"
#include "common/store/key_value_store.hpp"
#include "common/store/trajectory_store.hpp"
#include "common/store/weight_store.hpp"
#include "common/task/image.hpp"
#include "common/task/prompt.hpp"
#include "common/wire/messages.hpp"
#include "services/explorer/explored_images.hpp"
#include "services/explorer/explorer_metrics.hpp"
#include "services/explorer/explorer_options.hpp"
#include "services/explorer/inflight_store.hpp"
#include "services/explorer/policy_weights.hpp"

namespace spotlight::policy {
class Policy;  // common/policy/policy.hpp
}  // namespace spotlight::policy

namespace spotlight::explorer {

// What an explorer works with; every part must outlive the Explorer.
struct ExplorerParts {
  queue::LeaseQueue& queue;        // the run's seed-task queue (run::explore_queue_options)
  store::WeightStore& weights;     // key_prefix = RunKeys::prefix
  store::KeyValueStore& kv;        // constructed with RunKeys::prefix (keys are relative)
  reward::RewardFunction& reward;  // in-process or RemoteReward
  policy::Policy& policy;          // its weights are replaced by published versions
  metrics::Registry& registry;     // service "explorer"
  // Where kept trajectories go (key_prefix RunKeys::trajectories); null: tasks asking for one
  // complete without it (counted; the trainer samples those rollouts itself).
  store::TrajectoryStore* trajectories = nullptr;
  // The key tasks must be signed with; std::nullopt while unknown. Empty: run::shared_task_key
  // on `kv` ($SPOTLIGHT_TASK_KEY, else the run-local key the planner stored).
  std::function<std::optional<run::TaskKey>()> task_key = {};
};

enum class ExitReason {
  kStopped,      // stop was requested
  kRunFinished,  // trainer_iteration reached the run's iterations
};

// Run counters in the KV store (relative keys): sampler steps computed by all explorers, and
// steps skipped by resuming commits.
// Samples a chunk in place of parts.policy (e.g. on an SP group, services/explorer/sp_sampler.hpp):
// one image per prompt, in order, with the weights `version` that parts.policy holds. A throw
// fails the chunk's leases like an in-process sampling error.
using ChunkSampler = std::function<std::vector<task::Image>(
    std::int64_t version, const std::vector<task::Prompt>& prompts,
    const std::vector<std::uint64_t>& seeds, const sampler::SamplerOptions& sampler)>;

class Explorer {
 public:
  // Throws std::invalid_argument for invalid options.
  Explorer(ExplorerOptions options, ExplorerParts parts);

  // Replaces in-process sampling; call before run().
  void set_chunk_sampler(ChunkSampler sampler) { chunk_sampler_ = std::move(sampler); }

  // The loop described at the top of this file. Rides through Redis outages (one log line per
  // change of state, outage::OutageTracker); throws only queue::QueueAccessDenied /
  // store::StoreAccessDenied (Redis refused the credentials or permissions: retrying cannot help).
  ExitReason run(std::stop_token stop);

  const ExplorerOptions& options() const { return options_; }
  const ExplorerMetrics& metrics() const { return metrics_; }
  std::optional<std::int64_t> weights_version() const { return weights_.loaded(); }
  // For the weights prefetcher (weights_prefetch.hpp), which offers new versions from its thread.
  PolicyWeights& policy_weights() { return weights_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Held {
    queue::Lease lease;
    wire::SeedTask task;
    task::Prompt prompt;
    bool settled = false;  // completed, failed, released or lost: no longer ours to act on
    std::optional<wire::InflightCommit> resume;  // a usable commit: start at its step
    bool had_commit = false;                     // a commit existed (erase it when completed)
    std::int64_t resume_step() const { return resume ? resume->step_index : 0; }
    bool keeps_trajectory() const { return task.trajectory_end > 0; }
  };

  // True once the task key is known (looked up again at most every weights_retry_interval).
  bool have_task_key();
  // Counts and logs a refused task; retry: fail(lease) (re-delivered, dead-lettered after
  // max_deliveries), else reject(lease) (dead-lettered now).
  void refuse(const queue::Lease& lease, std::string_view reason, const std::string& why,
              bool retry);
  void heartbeat_if_due();
  bool run_finished_if_due();
  std::vector<queue::Lease> next_leases();
  std::optional<Held> admit(queue::Lease lease);
  void process(std::vector<queue::Lease> leases);
  // Reads the commits of `held` (a commit that does not decode is discarded and counted).
  void fetch_commits(std::span<Held> held);
  // The version to load for resuming: the one most commits with version >= need were made with.
  std::optional<std::int64_t> committed_version(std::span<const Held> held, std::int64_t need);
  // Keeps the commits usable with `version` (see the top of this file); counts the others.
  void check_commits(std::span<Held> held, std::int64_t version);
  // Samples, scores and records one chunk (tasks of one step count and resume step):
  // chunk_work, sample, drop_non_finite, score, record_results, each phase timed
  // (spotlight_explorer_chunk_seconds_total{phase}).
  void sample_chunk(std::span<Held> chunk, std::int64_t version);
  struct ChunkWork;
  ChunkWork chunk_work(std::span<Held> chunk);
  // False when the chunk is done without images: committed and released on a stop request, or
  // failed.
  bool sample(ChunkWork& work, std::span<Held> chunk, std::int64_t version);
  void drop_non_finite(ChunkWork& work, std::int64_t version);
  // False when the reward refused the input (the tasks failed); rethrows other reward errors.
  bool score(ChunkWork& work, std::int64_t version);
  // Completes each task with its result (and kept trajectory); `seconds`: sampling and scoring.
  void record_results(ChunkWork& work, std::int64_t version, double seconds);
  // Commits (if options_.commit_inflight) and releases `active` stopped at `step`; `latents` is
  // [B, C, H, W] float32 values of the chunk, sample after sample.
  void commit_and_release(const std::vector<Held*>& active, std::int64_t step, std::int64_t version,
                          const std::vector<float>& latents,
                          const std::vector<std::int64_t>& sample_shape);
  // Adds to a run counter (RunState::add_sample_steps / add_resumed_steps); a Redis outage only
  // costs the count.
  void add_run_counter(void (run::RunState::*add)(std::int64_t), std::int64_t delta);
  void extend_if_due(std::span<Held> held);
  // extend_if_due(held), then heartbeat_if_due(); an unavailable Redis is counted, not thrown.
  void keep_alive(std::span<Held> held);
  // Records `trajectory` (if not empty) and then `result`, retrying while Redis is unavailable.
  void complete(Held& held, const std::string& result, const std::string& trajectory = {});
  // The staleness bound of one task: its own max_staleness when set and tighter.
  std::int64_t staleness_bound(const wire::SeedTask& task) const;
  void fail(Held& held, const std::string& error);
  void fail(const queue::Lease& lease, const std::string& error);
  // fail() of a task sampled or scored with weights `version`: failures repeated on one version
  // (bad weights: NaN blobs, another model) are logged with it, at the 3rd and at every doubling
  // after (6, 12, ...).
  void fail_with_version(Held& held, const std::string& error, std::int64_t version);
  // A reward the reward function should not have given: counted by reason, logged (throttled:
  // every task of a bad service has one), the task dead-lettered now (rescoring gives the same).
  void reward_fault(Held& held, const reward::RewardFault& fault);
  void release_all(std::span<Held> held, const char* why);
  void release(Held& held, const char* why);

  bool stopping() const { return stop_.stop_requested(); }
  // Past stop request + grace_period (always false before a stop request).
  bool past_grace() const;
  // Waits `duration` or until stop is requested. Once stopping it returns at once, unless
  // `during_grace` (a result still to record): then it waits, but not past the grace deadline.
  void pause(std::chrono::milliseconds duration, bool during_grace = false);
  // Logs `e`, doubles the back-off (min_backoff .. max_backoff) and pauses that long.
  void backoff(const std::exception& e, const char* what, bool during_grace = false);

  ExplorerOptions options_;
  ExplorerParts parts_;
  run::RunState state_;
  run::TaskLimits limits_;  // options_.limits, with the policy's kind of prompts
  ExplorerMetrics metrics_;
  PolicyWeights weights_;
  InflightStore inflight_;
  ExploredImageRecorder explored_images_;
  ChunkSampler chunk_sampler_;  // empty: parts_.policy samples
  std::optional<run::TaskKey> task_key_;
  Clock::time_point next_key_lookup_{};
  bool said_waiting_for_key_ = false;
  outage::OutageTracker redis_;
  std::map<std::int64_t, std::int64_t> failures_by_version_;  // the newest few versions
  log::Throttle reward_fault_lines_{std::chrono::seconds(10)};

  std::stop_token stop_;
  std::atomic<std::int64_t> stop_requested_ns_{0};  // steady clock; 0: not requested
  std::chrono::milliseconds backoff_{0};
  Clock::time_point next_heartbeat_{};
  Clock::time_point next_finish_poll_{};
  Clock::time_point next_reclaim_{};
  Clock::time_point held_since_{};   // last lease / extend of the batch in hand
  std::int64_t leases_in_hand_ = 0;  // of the batch being processed, for the heartbeat
  std::int64_t last_iteration_logged_ = -1;
  std::optional<std::int64_t> last_missing_logged_;  // version last reported missing (info once)
};

}  // namespace spotlight::explorer
