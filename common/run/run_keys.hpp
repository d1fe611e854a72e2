#pragma once
// Every Redis key of one run, built here and nowhere else. Everything durable of a run lives under
// `prefix` = "spotlight:<run.id>". Construct the stores with it: RedisKeyValueStore(redis, prefix)
// takes the relative keys below (it adds "<prefix>:"); RedisWeightStore with key_prefix = prefix
// (it adds ":weights:..."); the lease queue with key_prefix = explore_queue (it adds its own
// sub-keys, common/queue/redis_lease_queue.hpp). Values are read and written through RunState
// (run_state.hpp), which knows each key's record type.
//
// The key table (relative to prefix unless marked absolute):
// clang-format off
//
//   key                          owner (writer)     readers            value (encoding, version)
//   trainer:iteration            trainer            planner, explorers wire::TrainerProgress v1
//   trainer:timing               trainer            planner            wire::TrainerTiming v1
//   planner:enqueued             planner            planner (restart)  wire::PlannerProgress v1
//   planner:plan:<iteration>     planner            trainer            wire::PlanRecord v2 (set once)
//   planner:prompt:<hash>        planner            planner (restart)  wire::PromptPosterior v1
//   explorer:<id>:heartbeat      explorer <id>      planner            wire::Heartbeat v1
//   inflight:<task id>           explorers          explorers          wire::InflightCommit v1
//   explored-image:<i>:<p>:<s>   explorers          trainer            PNG bytes (erased once drawn)
//   security:task_key            planner (once)     explorers          raw secret (only without
//                                                                      $SPOTLIGHT_TASK_KEY)
//   explorer:sample_steps        explorers          benchmarks, tests  Redis integer (INCRBY)
//   explorer:resumed_steps       explorers          benchmarks, tests  Redis integer (INCRBY)
//   cost:<class>:busy_ms         trainer, explorers trainer            Redis integer (INCRBY)
//   cost:<class>:idle_ms         trainer, explorers trainer            Redis integer (INCRBY)
//   <prefix>:weights:...         trainer            explorers          store::RedisWeightStore's
//                                                                      layout (absolute; chunks,
//                                                                      manifests)
//   <prefix>:trajectory:<task>   explorers          trainer            wire::SeedTrajectory v1
//                                                                      (absolute, expiring;
//                                                                      deleted once used)
//   <prefix>:explore:...         planner, explorers trainer            queue::RedisLeaseQueue's
//                                                                      layout (absolute; stream,
//                                                                      results)
//
// clang-format on
// Counters stay Redis integers: many processes add to them at once (INCRBY is atomic), which a
// versioned record would turn into a read-modify-write.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spotlight::run {

struct RunKeys {
  explicit RunKeys(const std::string& run_id);

  std::string prefix;         // spotlight:<run id>
  std::string explore_queue;  // absolute: <prefix>:explore (LeaseQueueOptions::key_prefix)
  std::string weights;        // absolute: <prefix>:weights (the location in WeightsNotice)
  // absolute: <prefix>:trajectory (TrajectoryStoreOptions::key_prefix); the kept trajectory of
  // seed task <id> is <prefix>:trajectory:<id> (wire::SeedTrajectory, expiring).
  std::string trajectories;

  // Relative keys (KeyValueStore constructed with `prefix`):
  std::string trainer_iteration = "trainer:iteration";
  std::string trainer_timing = "trainer:timing";
  std::string planner_state = "planner:enqueued";
  std::string sample_steps = "explorer:sample_steps";
  std::string resumed_steps = "explorer:resumed_steps";
  // The run-local task-signing key, written once by the planner when $SPOTLIGHT_TASK_KEY is
  // unset (common/run/task_key_source.hpp).
  static constexpr const char* kTaskKey = "security:task_key";

  // Relative keys with a part (the same for every run, hence static):
  static std::string plan(std::int64_t iteration);  // planner:plan:<iteration>
  // planner:prompt:<16 hex digits of FNV-1a 64 of the prompt text>
  static std::string prompt_posterior(std::string_view prompt_text);
  static std::string explorer_heartbeat(std::string_view id);  // explorer:<id>:heartbeat
  static std::string inflight(std::string_view task_id);       // inflight:<task id>
  // A PNG of an explored candidate kept for the trainer's exploration sample (written by the
  // explorer before it completes the task, erased by the trainer once it has drawn the sample).
  static std::string explored_image(std::int64_t iteration, std::int64_t prompt,
                                    std::uint64_t seed);  // explored-image:<it>:<prompt>:<seed>
  // cost:<device class>:busy_ms or :idle_ms (device class: "reserved", "spot").
  static std::string cost_ledger(std::string_view device_class, bool busy);

  // Every explorer's heartbeat key as an absolute SCAN MATCH pattern, and the explorer id of an
  // absolute heartbeat key (nullopt for any other key).
  std::string explorer_heartbeat_pattern() const;
  std::optional<std::string> explorer_of_heartbeat(std::string_view absolute_key) const;

  // The Redis key of a relative key: <prefix>:<relative>.
  std::string absolute(std::string_view relative) const;
};

}  // namespace spotlight::run
