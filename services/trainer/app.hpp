#pragma once
// The trainer's subcommands in the services build: commands.hpp's, with `train` wrapped in the
// services' hooks (train_hooks.hpp): exploration.mode async through Redis (outages ridden through
// up to trainer.redis_outage_limit_seconds, then exit 5) and ZeroMQ, weights published for
// explorers, the /metrics endpoint and cost accounting. Each returns a process exit code
// (common/service/exit_codes.hpp).

#include <stop_token>
#include <string>

#include "common/config/config.hpp"
#include "services/trainer/commands.hpp"

namespace spotlight::trainer {

// GRPO post-training, exploration.mode none|sync|async, with the services' hooks; SIGTERM/SIGINT
// as in commands.hpp.
int run_train(const config::Config& config);
// The same without signal handling: stops when `stop` is requested (returns 0).
int run_train(const config::Config& config, std::stop_token stop);

// Dispatches to commands.hpp's subcommands with the services' hooks; unknown subcommands print
// usage and return 2.
int run_subcommand(const std::string& subcommand, const config::Config& config);

}  // namespace spotlight::trainer
