#pragma once
// The trainer's subcommands on the compute core (no Redis, ZeroMQ or Prometheus), callable from
// main() and from tests:
//   pretrain  flow-matching pretraining of the base model -> <run.dir>/base.safetensors
//   train     GRPO post-training, resumes from checkpoints; exploration.mode none|sync here, and
//             whatever else `hooks` provides (the services build: async, app.hpp)
//   eval      validation score of a checkpoint (model.base)
//   bench     matmul peak, the DiT forward's FLOP/s and share of it, sampler throughput (bench.hpp)
// Each returns a process exit code.

#include <string>

#include "common/config/config.hpp"
#include "services/trainer/train_hooks.hpp"

namespace spotlight::trainer {

int run_pretrain(const config::Config& config);
// Throws config::ConfigError for an exploration.mode neither the core nor `hooks` provides.
int run_train(const config::Config& config, TrainHooks& hooks);
int run_eval(const config::Config& config);
int run_bench(const config::Config& config);

// Dispatches `subcommand` (train with `hooks`); unknown subcommands print usage and return 2.
int run_subcommand(const std::string& subcommand, const config::Config& config, TrainHooks& hooks);

}  // namespace spotlight::trainer
