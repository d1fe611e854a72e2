#pragma once
// Where a run's task-signing key comes from (common/run/task_signature.hpp):
//
//   1. $SPOTLIGHT_TASK_KEY, when set (the same value in the planner and every explorer): the
//      deployment's secret; nothing is written to Redis.
//   2. Else a run-local key: the planner generates one the first time it plans and keeps it in
//      the run's store under RunKeys::task_key (written once; a restarted planner reuses it);
//      explorers read it there. Protects against writers of the task stream who cannot read that
//      key (the ACL in deploy/redis/users.acl lets only the run's roles read it), not against
//      whoever can read Redis: deployments set SPOTLIGHT_TASK_KEY.
//
// Errors: store::StoreUnavailable / StoreError propagate; a malformed environment variable or
// stored key throws (config::ConfigError / std::invalid_argument) naming it.

#include <functional>
#include <optional>
#include <string>

#include "common/redis/client.hpp"
#include "common/run/task_signature.hpp"
#include "common/store/key_value_store.hpp"
#include "common/store/weight_store.hpp"

namespace spotlight::run {

// The planner's key: 1, else 2 (created in `run_store` if absent).
TaskKey planner_task_key(store::KeyValueStore& run_store);
// An explorer's key: 1, else 2 once the planner created it (std::nullopt until then).
std::optional<TaskKey> shared_task_key(store::KeyValueStore& run_store);

// The run's task key as the key a weight store signs and checks its manifests with
// (store::WeightStoreOptions::manifest_key), over its own connection to the run's store at
// `prefix`: planner_task_key() when `create` (the trainer, which may publish before the planner
// ran), else shared_task_key(); cached once known. One source per weight store (a source is
// thread-compatible, like the store).
std::function<std::optional<store::ManifestKey>()> manifest_key_source(redis::RedisOptions redis,
                                                                       std::string prefix,
                                                                       bool create);

}  // namespace spotlight::run
