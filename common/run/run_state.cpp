#include "common/run/run_state.hpp"

#include <utility>

#include "common/wire/error.hpp"

namespace spotlight::run {

RunState::RunState(store::KeyValueStore& kv, RunKeys keys) : kv_(kv), keys_(std::move(keys)) {}

template <class Record>
std::optional<Record> RunState::read(const std::string& key) {
  const auto bytes = kv_.get(key);
  if (!bytes) return std::nullopt;
  try {
    return Record::decode(*bytes);
  } catch (const wire::WireError& e) {
    throw MalformedRunState(keys_.absolute(key), "run state " + keys_.absolute(key) + ": not a " +
                                                     std::string(Record::kType) + " record (" +
                                                     e.what() + ")");
  }
}

std::optional<wire::TrainerProgress> RunState::trainer_progress() {
  return read<wire::TrainerProgress>(keys_.trainer_iteration);
}

void RunState::put_trainer_progress(const wire::TrainerProgress& progress) {
  kv_.put(keys_.trainer_iteration, progress.encode());
}

std::optional<wire::TrainerTiming> RunState::trainer_timing() {
  return read<wire::TrainerTiming>(keys_.trainer_timing);
}

void RunState::put_trainer_timing(const wire::TrainerTiming& timing) {
  kv_.put(keys_.trainer_timing, timing.encode());
}

std::optional<wire::PlannerProgress> RunState::planner_progress() {
  return read<wire::PlannerProgress>(keys_.planner_state);
}

void RunState::put_planner_progress(const wire::PlannerProgress& progress) {
  kv_.put(keys_.planner_state, progress.encode());
}

std::optional<wire::PlanRecord> RunState::plan(std::int64_t iteration) {
  auto record = read<wire::PlanRecord>(keys_.plan(iteration));
  if (record && record->iteration != iteration) {
    throw MalformedRunState(keys_.absolute(keys_.plan(iteration)),
                            "run state " + keys_.absolute(keys_.plan(iteration)) +
                                ": holds the plan of iteration " +
                                std::to_string(record->iteration));
  }
  return record;
}

bool RunState::put_plan_if_absent(const wire::PlanRecord& record) {
  return kv_.put_if_absent(keys_.plan(record.iteration), record.encode());
}

std::optional<wire::PromptPosterior> RunState::prompt_posterior(const std::string& prompt_text) {
  auto record = read<wire::PromptPosterior>(keys_.prompt_posterior(prompt_text));
  if (record && record->prompt_text != prompt_text) return std::nullopt;
  return record;
}

void RunState::put_prompt_posterior(const wire::PromptPosterior& posterior) {
  kv_.put(keys_.prompt_posterior(posterior.prompt_text), posterior.encode());
}

std::optional<wire::Heartbeat> RunState::heartbeat(const std::string& explorer_id) {
  return read<wire::Heartbeat>(keys_.explorer_heartbeat(explorer_id));
}

void RunState::put_heartbeat(const wire::Heartbeat& heartbeat) {
  kv_.put(keys_.explorer_heartbeat(heartbeat.explorer_id), heartbeat.encode());
}

std::optional<wire::InflightCommit> RunState::inflight(const std::string& task_id) {
  return read<wire::InflightCommit>(keys_.inflight(task_id));
}

void RunState::put_inflight(const wire::InflightCommit& commit) {
  kv_.put(keys_.inflight(commit.task_id), commit.encode());
}

bool RunState::erase_inflight(const std::string& task_id) {
  return kv_.erase(keys_.inflight(task_id));
}

void RunState::add_sample_steps(std::int64_t steps) {
  kv_.add(keys_.sample_steps, steps);
}

void RunState::add_resumed_steps(std::int64_t steps) {
  kv_.add(keys_.resumed_steps, steps);
}

std::int64_t RunState::sample_steps() {
  return kv_.counter(keys_.sample_steps);
}

std::int64_t RunState::resumed_steps() {
  return kv_.counter(keys_.resumed_steps);
}

}  // namespace spotlight::run
