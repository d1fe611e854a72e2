#pragma once
// The trainer's subcommands, callable from main() and from tests:
//   pretrain  flow-matching pretraining of the base model -> pretrain.output, or the recipe's
//             entry of pretrain.cache_dir (reused when present); prints the checkpoint's path
//   train     GRPO post-training (exploration.mode none|sync|async), resumes from checkpoints;
//             SIGTERM/SIGINT abandon the iteration in progress and exit 0 within
//             trainer.grace_seconds (else exit 3)
//   eval      validation score of a checkpoint (model.base)
//   validate  scores the weights a run with validation.defer saved (<run.dir>/validation.jsonl)
//   bench     sampler throughput and the DiT forward's share of measured sgemm FLOP/s
//   report RUN_DIR [OUT.html]   the run report (run_report.hpp) of a run directory, on demand
//   page PAGE.json OUT.html     a report page from a JSON description (common/report/page_json.hpp)
// Each returns a process exit code (common/service/exit_codes.hpp); configuration problems throw
// config::ConfigError, unwritable files durable::WriteError (main's guard maps them to 2 and 6).

#include <stop_token>
#include <string>
#include <vector>

#include "common/config/config.hpp"

namespace spotlight::trainer {

int run_pretrain(const config::Config& config);
int run_train(const config::Config& config);
// run_train without signal handling: stops when `stop` is requested (returns 0), exits with
// kExitOutageLimit after trainer.redis_outage_limit_seconds of Redis outage.
int run_train(const config::Config& config, std::stop_token stop);
int run_eval(const config::Config& config);
int run_validate(const config::Config& config);
int run_bench(const config::Config& config);

int run_report_command(const std::vector<std::string>& args);  // args: "report", RUN_DIR [, OUT]
int run_page_command(const std::vector<std::string>& args);    // args: "page", PAGE.json, OUT

// Dispatches args[0] (the positional words of the command line) to one of the above; unknown
// subcommands print usage and return 2.
int run_subcommand(const std::vector<std::string>& args, const config::Config& config);
int run_subcommand(const std::string& subcommand, const config::Config& config);

}  // namespace spotlight::trainer
