#pragma once
// The reward service as a process: what main() runs after loading the configuration.

#include "common/config/config.hpp"

namespace spotlight::reward {

// Builds the reward function, serves metrics on metrics.bind and requests on reward.bind until
// SIGTERM or SIGINT, then answers the batch in hand and returns. Logs (info)
//   "listening on <resolved endpoint>"   once requests are accepted
//   "metrics on <url>"                   when metrics are served
// Returns the exit code: 0 after a stop signal, 1 when serving failed (e.g. the address is in
// use), 2 for a configuration it cannot use (e.g. weights that do not match the functions).
int run_reward_service(const config::Config& config);

}  // namespace spotlight::reward
