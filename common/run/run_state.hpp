#pragma once
// Typed access to the run's shared state in Redis: each key of RunKeys (run_keys.hpp) with its
// record type, so no service builds a key or decodes a value by hand.
//
//   store::RedisKeyValueStore kv(redis, keys.prefix);
//   run::RunState state(kv, keys);
//   state.put_trainer_progress({.iteration = 3, .iterations = 40, .unix_ms = now});
//   if (auto p = state.trainer_progress()) ...          // nullopt: not written yet
//
// Errors: a value that is present but not the expected record (another encoding, garbage, a
// newer version) throws MalformedRunState naming the key and what is wrong; callers count it and
// carry on as if absent where that is safe. Store errors pass through (StoreUnavailable: back off
// and retry). Thread-compatible, like the KeyValueStore it wraps.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/run/run_keys.hpp"
#include "common/store/key_value_store.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::run {

class MalformedRunState : public std::runtime_error {
 public:
  MalformedRunState(std::string key, const std::string& what)
      : std::runtime_error(what), key_(std::move(key)) {}
  const std::string& key() const { return key_; }  // absolute Redis key

 private:
  std::string key_;
};

class RunState {
 public:
  // `kv` is the run's store, constructed with keys.prefix; it must outlive this object.
  RunState(store::KeyValueStore& kv, RunKeys keys);

  const RunKeys& keys() const { return keys_; }

  std::optional<wire::TrainerProgress> trainer_progress();
  void put_trainer_progress(const wire::TrainerProgress& progress);

  std::optional<wire::TrainerTiming> trainer_timing();
  void put_trainer_timing(const wire::TrainerTiming& timing);

  std::optional<wire::PlannerProgress> planner_progress();
  void put_planner_progress(const wire::PlannerProgress& progress);

  std::optional<wire::PlanRecord> plan(std::int64_t iteration);
  // Writes the plan of record.iteration unless one exists; true if this call wrote it.
  bool put_plan_if_absent(const wire::PlanRecord& record);

  // The posterior of `prompt_text`; nullopt when absent or when the record under its hash names
  // another prompt (a hash collision: the caller starts from its prior).
  std::optional<wire::PromptPosterior> prompt_posterior(const std::string& prompt_text);
  void put_prompt_posterior(const wire::PromptPosterior& posterior);  // under its prompt_text

  std::optional<wire::Heartbeat> heartbeat(const std::string& explorer_id);
  void put_heartbeat(const wire::Heartbeat& heartbeat);  // under heartbeat.explorer_id

  std::optional<wire::InflightCommit> inflight(const std::string& task_id);
  void put_inflight(const wire::InflightCommit& commit);  // under commit.task_id
  bool erase_inflight(const std::string& task_id);

  // Run-wide counters of sampler steps computed and skipped by resuming (explorers).
  void add_sample_steps(std::int64_t steps);
  void add_resumed_steps(std::int64_t steps);
  std::int64_t sample_steps();
  std::int64_t resumed_steps();

 private:
  template <class Record>
  std::optional<Record> read(const std::string& key);

  store::KeyValueStore& kv_;
  RunKeys keys_;
};

}  // namespace spotlight::run
