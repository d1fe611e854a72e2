#pragma once
// The trainer's subcommands in the services build: commands.hpp's, with `train` and `validate`
// wrapped in the services' hooks (train_hooks.hpp): exploration.mode async and offload through
// Redis (outages ridden through up to trainer.redis_outage_limit_seconds, then exit 5) and ZeroMQ,
// weights published for explorers, the /metrics endpoint, cost accounting, validation grids and
// the run report; and two subcommands that only read files:
//   report RUN_DIR [OUT.html]   the run report (run_report.hpp) of a run directory, on demand
//   page PAGE.json OUT.html     a report page from a JSON description (common/report/page_json.hpp)
// Each returns a process exit code (common/service/exit_codes.hpp); configuration problems throw
// config::ConfigError, unwritable files durable::WriteError (main's guard maps them to 2 and 6).

#include <stop_token>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "services/trainer/commands.hpp"

namespace spotlight::trainer {

// GRPO post-training, exploration.mode none|sync|sync-stale|async|offload, with the services'
// hooks; SIGTERM/SIGINT as in commands.hpp.
int run_train(const config::Config& config);
// The same without signal handling: stops when `stop` is requested (returns 0), exits with
// kExitOutageLimit after trainer.redis_outage_limit_seconds of Redis outage.
int run_train(const config::Config& config, std::stop_token stop);
// Deferred validation with the validation grids of every scored weights version.
int run_validate(const config::Config& config);

int run_report_command(const std::vector<std::string>& args);  // args: "report", RUN_DIR [, OUT]
int run_page_command(const std::vector<std::string>& args);    // args: "page", PAGE.json, OUT

// Dispatches args[0] (the positional words of the command line) to one of the above or to
// commands.hpp's subcommands with the services' hooks; unknown subcommands print usage and
// return 2.
int run_subcommand(const std::vector<std::string>& args, const config::Config& config);
int run_subcommand(const std::string& subcommand, const config::Config& config);

}  // namespace spotlight::trainer
