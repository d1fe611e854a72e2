#pragma once
// The trainer's subcommands on the compute core (no Redis, ZeroMQ or Prometheus), callable from
// main() and from tests:
//   pretrain  flow-matching pretraining of the base model -> pretrain.output, or the recipe's
//             entry of pretrain.cache_dir (reused when present); prints the checkpoint's path
//   train     GRPO post-training, resumes from checkpoints; exploration.mode none|sync|sync-stale
//             here, and whatever else `hooks` provides (the services build: async and offload,
//             app.hpp). SIGTERM/SIGINT abandon the iteration in progress and exit 0 within
//             trainer.grace_seconds (else 3)
//   eval      validation score of a checkpoint (model.base)
//   validate  scores the weights a run with validation.defer saved (<run.dir>/validation.jsonl);
//             `hooks` see every score (the services build draws their validation grids)
//   bench     matmul peak, the DiT forward's FLOP/s and share of it, sampler throughput, GRPO
//             timing of the built-in MMDiT (model.kind native; bench.hpp)
// Each returns a process exit code (common/service/exit_codes.hpp); configuration problems throw
// config::ConfigError, unwritable files durable::WriteError (main maps them to 2 and 6).

#include <stop_token>
#include <string>

#include "common/config/config.hpp"
#include "services/trainer/train_hooks.hpp"

namespace spotlight::trainer {

// Whether the core trains with exploration.mode `mode` by itself (none, sync, sync-stale).
bool core_mode(run::ExplorationMode mode);

int run_pretrain(const config::Config& config);
// Throws config::ConfigError for an exploration.mode neither the core nor `hooks` provides.
int run_train(const config::Config& config, TrainHooks& hooks);
// run_train without signal handling: stops when `stop` is requested (returns 0).
int run_train(const config::Config& config, std::stop_token stop, TrainHooks& hooks);
// task.kind prompt_file is scored by hooks.remote_reward() (a ConfigError where there is none).
int run_eval(const config::Config& config, TrainHooks& hooks);
int run_validate(const config::Config& config, TrainHooks& hooks);
int run_bench(const config::Config& config);

// Dispatches `subcommand` (train with `hooks`); unknown subcommands print usage and return 2.
int run_subcommand(const std::string& subcommand, const config::Config& config, TrainHooks& hooks);

}  // namespace spotlight::trainer
