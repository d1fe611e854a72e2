#pragma once
// What one explorer does and how patiently (docs/iteration.md). Built from the run
// configuration by explorer_options(); the intervals that the run schema does not (yet) expose
// keep the named defaults below.

#include <chrono>
#include <cstdint>
#include <string>

#include "common/config/config.hpp"
#include "common/run/task_checks.hpp"
#include "common/sampler/sampler_options.hpp"

namespace spotlight::explorer {

inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultLeaseTimeout{30000};
// lease() waits this long for a task: it bounds how late a stop request or the end of the run is
// noticed while idle.
inline constexpr std::chrono::milliseconds kDefaultBlockTimeout{250};
// Expired leases of dead explorers, failed and released tasks come back through reclaim().
inline constexpr std::chrono::milliseconds kDefaultReclaimInterval{1000};
// A weights version that is missing or corrupt is asked for again after this long.
inline constexpr std::chrono::milliseconds kDefaultWeightsRetryInterval{500};
// How often trainer_iteration is read to notice the end of the run.
inline constexpr std::chrono::milliseconds kDefaultFinishPollInterval{500};
// Back-off after Redis (or the reward service) is unavailable: doubles up to the maximum.
inline constexpr std::chrono::milliseconds kDefaultMinBackoff{100};
inline constexpr std::chrono::milliseconds kDefaultMaxBackoff{5000};
inline constexpr std::chrono::milliseconds kDefaultGracePeriod{30000};

struct ExplorerOptions {
  std::string id;      // consumer name, unique per explorer process (default_explorer_id())
  std::string run_id;  // tasks of another run are rejected as malformed
  int batch = 8;       // tasks leased (and sampled) together, >= 1
  // Samples per forward pass; 0: batch. The batch composition decides the exact floating-point
  // result, so a task's reward is bit-reproducible for a fixed (batch, chunk, task order).
  int chunk = 0;
  std::int64_t max_staleness = 1;  // weights may be this many versions older than a task asks
  std::int64_t iterations = 1;     // trainer.iterations: the run ends at trainer_iteration >= it
  // What a task may ask for (run::task_problem); a task outside is failed, not run.
  run::TaskLimits limits;
  // Noise level, shift of the SDE sampler; steps come from each task.
  sampler::SamplerOptions sampler;

  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  std::chrono::milliseconds lease_timeout = kDefaultLeaseTimeout;  // reclaim()'s min_idle
  std::chrono::milliseconds block_timeout = kDefaultBlockTimeout;
  std::chrono::milliseconds reclaim_interval = kDefaultReclaimInterval;
  std::chrono::milliseconds weights_retry_interval = kDefaultWeightsRetryInterval;
  std::chrono::milliseconds finish_poll_interval = kDefaultFinishPollInterval;
  std::chrono::milliseconds min_backoff = kDefaultMinBackoff;
  std::chrono::milliseconds max_backoff = kDefaultMaxBackoff;
  // After a stop request the explorer returns within this time (plus one chunk's sampling if
  // one is running); what it still holds then is left to lease expiry.
  std::chrono::milliseconds grace_period = kDefaultGracePeriod;
  // On a stop request the chunk being sampled stops at the next step boundary; true: its state is
  // committed (InflightStore) before its leases are released, so the next holder resumes it;
  // false: it is released as is and the next holder starts again from step 0.
  bool commit_inflight = true;
  // Keep the images of prompt 0's candidates every this many iterations for the trainer's
  // exploration samples (0: never; services/explorer/explored_images.hpp).
  int sample_images_every = 0;

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

// "<hostname>-<pid>".
std::string default_explorer_id();

// From the run schema (common/run/run_config.hpp): explorer.*, run.id, trainer.iterations,
// exploration.lease_timeout_ms, sampler.noise_level / shift, the task limits
// (run::task_limits). An empty explorer.id gives
// default_explorer_id().
ExplorerOptions explorer_options(const config::Config& config);

}  // namespace spotlight::explorer
