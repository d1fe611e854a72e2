#pragma once
// The reward service's configuration schema and its translation into options and the weighted
// reward function.
//
// Keys: reward.bind, reward.functions, reward.weights, reward.max_batch, reward.batch_window_ms,
// reward.max_request_bytes, task.image_size, metrics.bind (see reward_schema().help()).

#include <memory>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/reward/reward_function.hpp"
#include "common/task/options.hpp"
#include "services/reward/reward_service.hpp"

namespace spotlight::reward {

// The names reward.functions accepts: "task" (the embedded task's rule-based scorer). A
// TorchScript reward model is not available yet.
const std::vector<std::string>& reward_function_names();

const config::Schema& reward_schema();

RewardServiceOptions reward_service_options(const config::Config& config);

// sum_i weights[i] * functions[i]. Throws std::invalid_argument naming an unknown function, a
// count mismatch, an empty list or a non-finite weight.
std::unique_ptr<RewardFunction> make_reward_function(const std::vector<std::string>& functions,
                                                     const std::vector<double>& weights,
                                                     const task::TaskOptions& task);
// The same from reward.functions and reward.weights; throws config::ConfigError naming the key.
std::unique_ptr<RewardFunction> make_reward_function(const config::Config& config);

}  // namespace spotlight::reward
