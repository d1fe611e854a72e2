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

#include <optional>

#include "common/run/task_signature.hpp"
#include "common/store/key_value_store.hpp"

namespace spotlight::run {

// The planner's key: 1, else 2 (created in `run_store` if absent).
TaskKey planner_task_key(store::KeyValueStore& run_store);
// An explorer's key: 1, else 2 once the planner created it (std::nullopt until then).
std::optional<TaskKey> shared_task_key(store::KeyValueStore& run_store);

}  // namespace spotlight::run
