#include "common/run/task_key_source.hpp"

#include <stdexcept>

#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"

namespace spotlight::run {
namespace {

std::optional<TaskKey> stored(store::KeyValueStore& run_store) {
  const auto secret = run_store.get(RunKeys::kTaskKey);
  if (!secret) return std::nullopt;
  try {
    return TaskKey(*secret);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("run key ") + RunKeys::kTaskKey + ": " + e.what());
  }
}

}  // namespace

TaskKey planner_task_key(store::KeyValueStore& run_store) {
  if (auto key = TaskKey::from_env()) return *key;
  run_store.put_if_absent(RunKeys::kTaskKey, TaskKey::generate().secret());
  return *stored(run_store);  // ours, or the one a previous planner of the run made
}

std::optional<TaskKey> shared_task_key(store::KeyValueStore& run_store) {
  if (auto key = TaskKey::from_env()) return key;
  return stored(run_store);
}

}  // namespace spotlight::run
