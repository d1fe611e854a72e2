#include "common/run/task_key_source.hpp"

#include <memory>
#include <stdexcept>
#include <utility>

#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/store/redis_key_value_store.hpp"

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

std::function<std::optional<store::ManifestKey>()> manifest_key_source(redis::RedisOptions redis,
                                                                       std::string prefix,
                                                                       bool create) {
  auto kv = std::make_shared<store::RedisKeyValueStore>(std::move(redis), std::move(prefix));
  auto known = std::make_shared<std::optional<store::ManifestKey>>();
  return [kv, known, create]() -> std::optional<store::ManifestKey> {
    if (!*known) {
      const std::optional<TaskKey> key =
          create ? std::optional<TaskKey>(planner_task_key(*kv)) : shared_task_key(*kv);
      if (key) *known = store::ManifestKey{key->id(), key->secret()};
    }
    return *known;
  };
}

}  // namespace spotlight::run
