#pragma once
// The trainer's subcommands, callable from main() and from tests:
//   pretrain  flow-matching pretraining of the base model -> <run.dir>/base.safetensors
//   train     GRPO post-training (exploration.mode none|sync|async), resumes from checkpoints
//   eval      validation score of a checkpoint (model.base)
//   bench     matmul peak, the DiT forward's FLOP/s and share of it, sampler throughput (bench.hpp)
// Each returns a process exit code.

#include "common/config/config.hpp"

namespace spotlight::trainer {

int run_pretrain(const config::Config& config);
int run_train(const config::Config& config);
int run_eval(const config::Config& config);
int run_bench(const config::Config& config);

// Dispatches args[0] to one of the above; unknown subcommands print usage and return 2.
int run_subcommand(const std::string& subcommand, const config::Config& config);

}  // namespace spotlight::trainer
