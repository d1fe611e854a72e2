#pragma once
// The explorer as a process: what main() runs after loading the run configuration.

#include <memory>

#include "common/config/config.hpp"
#include "common/reward/reward_function.hpp"
#include "common/task/options.hpp"
#include "services/explorer/preemption_notice.hpp"

namespace spotlight::explorer {

// reward.endpoint set: a RemoteReward client of the reward service (reward.timeout_ms per
// attempt, reward.retries retries after the first); empty: the embedded task's in-process scorer
// with `task` (the policy's task options, which carry the image size of the model preset).
std::unique_ptr<reward::RewardFunction> make_explorer_reward(const config::Config& config,
                                                             const task::TaskOptions& task);

// explorer.preemption_notice_file / _url / preemption_poll_ms. Throws std::invalid_argument for a
// URL that is not http://host[:port]/path.
PreemptionNoticeOptions preemption_notice_options(const config::Config& config);

// Connects to Redis (run.id's keys), builds the policy and the reward, serves metrics on
// metrics.bind (when set) and runs one Explorer until SIGTERM / SIGINT, a preemption notice
// (preemption_notice_options; the same as SIGTERM: commit in-flight work, exit 0) or the end of the
// run (trainer_iteration >= trainer.iterations). Logs (info) "explorer <id> started" once running.
// Returns the exit code: 0 after a stop signal or the end of the run, 1 when it cannot start,
// 3 when the explorer did not return within explorer.grace_seconds of a signal.
int run_explorer(const config::Config& config);

}  // namespace spotlight::explorer
