#pragma once
// The trainer's subcommands, callable from main() and from tests:
//   pretrain  flow-matching pretraining of the base model -> <run.dir>/base.safetensors
//   train     GRPO post-training (exploration.mode none|sync|async), resumes from checkpoints
//   eval      validation score of a checkpoint (model.base)
//   validate  scores the weights a run with validation.defer saved (<run.dir>/validation.jsonl)
//   bench     sampler throughput and the DiT forward's share of measured sgemm FLOP/s
// Each returns a process exit code.

#include "common/config/config.hpp"

namespace spotlight::trainer {

int run_pretrain(const config::Config& config);
int run_train(const config::Config& config);
int run_eval(const config::Config& config);
int run_validate(const config::Config& config);
int run_bench(const config::Config& config);

// Dispatches args[0] to one of the above; unknown subcommands print usage and return 2.
int run_subcommand(const std::string& subcommand, const config::Config& config);

}  // namespace spotlight::trainer
