#pragma once
// The soak (issue #13, item 8): one async job with the whole system as processes -- the local
// cluster (redis-server with AOF, reward, planner, trainer) plus spotlight-chaos starting and
// preempting the explorers from a spot availability trace -- under every fault at once:
//
//   - trace-driven explorer preemptions: SIGTERM (+ grace) and SIGKILL, in correlated bursts
//     when the trace drops by several (the driver's schedule);
//   - redis-server SIGKILLed `redis_kills` times (restarted after `redis_down`, its AOF replayed)
//     and SIGSTOPped `redis_pauses` times (SIGCONT after `redis_pause`);
//   - the trainer SIGKILLed `trainer_kills` times and restarted (it resumes from its checkpoint);
//   - `disk_full` of those restarts run with every write under <run.dir>/checkpoints failing
//     with ENOSPC (the LD_PRELOAD write-failure shim `fault_shim`): the trainer must exit 6
//     (service::kExitStorage) at its next checkpoint, and is restarted without the shim (room
//     again) to resume.
//
// Schedule: the F = redis_kills + redis_pauses + trainer_kills faults are interleaved (redis
// kill, redis pause, trainer kill, ...) and fault f (0-based) fires once the trainer's
// metrics.jsonl has recorded iteration floor((f + 1) * K / (F + 1)) (K = trainer.iterations);
// the disk-full restarts are the first `disk_full` trainer kills.
//
// Failures (SoakReport::failures, one line each): any process exiting on its own while the job
// runs -- redis, reward, planner or the driver at all, the trainer other than 0 at the end or 6
// in a disk-full episode, an explorer exiting non-zero unsignalled (the driver's failed_exits) --
// or a fault not applied before the job ended; and the audit once the trainer is done, with the
// planner and the driver drained: a scheduled task without a result (lost), a result acknowledged
// more than once (double-counted), a result for no scheduled task, anything still leased or
// dead-lettered, the iterations in metrics.jsonl other than -1, 0, ..., K-1 each once, a prompt
// that fell back to random seeds, a trainer restart without its "resumed from checkpoint" line,
// or fewer preemptions than `min_preemptions`.
//
// Not thread-safe; run_soak() owns the processes and stops them all before it returns.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "common/config/config.hpp"

namespace spotlight::soak {

inline constexpr std::chrono::milliseconds kDefaultRedisDown{3000};
inline constexpr std::chrono::milliseconds kDefaultRedisPause{5000};
inline constexpr std::chrono::milliseconds kDefaultJobTimeout{std::chrono::hours(2)};

struct SoakOptions {
  std::filesystem::path bin_dir;    // <bin_dir>/<service>/spotlight-<service>
  std::filesystem::path chaos_bin;  // spotlight-chaos
  config::ConfigSources run;        // the job (exploration.mode async, run.dir, run.id ...)
  // Preemptions (spotlight-chaos's flags of the same names).
  std::filesystem::path trace;
  double time_scale = 600;
  int max_explorers = 4;
  int min_explorers = 1;
  double kill_ratio = 0.5;
  std::uint64_t seed = 1;
  std::size_t start_tick = 0;
  double grace_seconds = 5;
  int explorer_threads = 1;
  // Faults beside the preemptions.
  int redis_kills = 0;
  int redis_pauses = 0;
  int trainer_kills = 0;
  int disk_full = 0;                 // <= trainer_kills; needs fault_shim
  std::filesystem::path fault_shim;  // libspotlight_test_fault_fs_preload.so
  std::chrono::milliseconds redis_down = kDefaultRedisDown;    // SIGKILL -> restart
  std::chrono::milliseconds redis_pause = kDefaultRedisPause;  // SIGSTOP -> SIGCONT
  std::int64_t min_preemptions = 0;                            // fewer is a failure
  std::chrono::milliseconds job_timeout = kDefaultJobTimeout;
  std::ostream* echo = nullptr;  // one line per fault and phase; null: quiet

  void validate() const;  // std::invalid_argument naming the field
};

struct SoakReport {
  double seconds = 0;
  // Preemptions (the driver's summary and events).
  std::int64_t explorer_starts = 0;
  std::int64_t preempt_term = 0;
  std::int64_t preempt_kill = 0;
  std::int64_t escalated = 0;         // SIGTERM'd explorers still alive after the grace
  std::int64_t max_burst = 0;         // most preemptions in one tick
  std::int64_t half_pool_bursts = 0;  // ticks preempting >= half of max_explorers (>= 2)
  std::int64_t explorer_failed_exits = 0;
  // Faults applied.
  int redis_kills = 0;
  int redis_pauses = 0;
  int trainer_kills = 0;
  int disk_full = 0;                   // episodes where the trainer exited 6 as it must
  std::int64_t trainer_restarts = 0;   // kills + disk-full episodes
  std::int64_t iterations_redone = 0;  // recorded, then dropped by a resume and trained again
  // The audit.
  std::int64_t iterations = 0;  // K
  std::int64_t tasks_scheduled = 0;
  std::int64_t results = 0;
  std::int64_t acked = 0;
  std::int64_t tasks_lost = 0;
  std::int64_t double_counted = 0;  // acknowledgements beyond one per result
  std::int64_t unscheduled_results = 0;
  std::int64_t duplicate_runs = 0;  // results recorded twice and dropped by the queue
  std::int64_t reclaimed = 0;
  std::int64_t dead_lettered = 0;
  std::int64_t leased_at_end = 0;
  std::int64_t sample_steps = 0;
  std::int64_t sample_steps_needed = 0;
  std::int64_t redone_steps = 0;  // sample_steps - needed
  std::int64_t resumed_steps = 0;
  bool iterations_trained_once = false;
  std::int64_t fallback_prompts = 0;
  std::vector<std::string> failures;

  bool ok() const { return failures.empty(); }
  std::string to_json() const;
};

// Runs the soak (see the contract above). Throws std::invalid_argument for bad options,
// config::ConfigError for a bad run configuration, cluster::ClusterError when the cluster does
// not come up; everything the soak finds is in the report. A stop request ends it early (a
// failure: "stopped").
SoakReport run_soak(const SoakOptions& options, std::stop_token stop = {});

}  // namespace spotlight::soak
